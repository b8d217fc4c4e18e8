"""Upload a built package to its content-addressed gs:// URI, once.

The URI names the content (``source.package_uri``), so an object already there
is this package: nothing is uploaded. The upload itself is conditional on the
object not existing (``if_generation_match=0``,
https://cloud.google.com/storage/docs/request-preconditions), so two submits
racing on the same source store it once; the loser's PreconditionFailed means
"already there", not an error.

google-cloud-storage is imported lazily, inside the functions that call it: this
module is imported by plan's text (render.packaging), by vxtrain.submission and by
the local runner, where google.cloud.storage would cost +250 ms and
google.api_core.exceptions +60 ms (measured after ``vxtrain plan``) for nothing;
only a submit that uploads needs them. It honours ``STORAGE_EMULATOR_HOST``, which
is how the tests run against a real GCS emulator.

Nothing here prints: a large upload reports how far it got to an
``UploadProgress`` its caller gives (the command line's draws a bar).
"""
from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from vxtrain.errors import ApiError, NotFoundError, PermissionError_, UnavailableError

if TYPE_CHECKING:
    from google.cloud.storage import Client

#: Packages at least this big report their upload's progress (when someone watches).
PROGRESS_THRESHOLD = 8 * 1024 * 1024
#: Resumable-upload chunk for large packages (a multiple of 256 KiB, as GCS requires).
CHUNK_SIZE = 4 * 1024 * 1024


#: Told how many bytes of the file an upload has read so far.
Position = Callable[[int], object]


class UploadProgress(Protocol):
    """Watches an upload as it goes (vxtrain.render draws a bar on a terminal)."""

    def __call__(self, description: str, size: int) -> AbstractContextManager[Position] | None:
        """A display for an upload of ``size`` bytes about to start: entered while it runs
        and told the bytes read so far. None: nobody watches (the file goes in one request)."""


@dataclass(frozen=True)
class Uploaded:
    """Where a package is and whether this call put it there."""

    uri: str
    generation: int
    uploaded: bool  # False: the object was already there (or another submit won the race)


def split_gs_uri(uri: str) -> tuple[str, str]:
    """``gs://bucket/a/b`` → ``("bucket", "a/b")``; ValueError for anything else."""
    if not uri.startswith("gs://"):
        raise ValueError(f"not a gs:// URI: {uri!r}")
    bucket, _, name = uri[len("gs://"):].partition("/")
    if not bucket:
        raise ValueError(f"gs:// URI without a bucket: {uri!r}")
    return bucket, name


def storage_client(project: str | None = None, purpose: str = "upload the package") -> Client:
    """A storage client: anonymous against ``STORAGE_EMULATOR_HOST``, else default credentials
    (``purpose`` says what they were needed for when there are none)."""
    # lazy: google-cloud-storage only where a bucket is used (+250 ms: see the module docstring)
    from google.auth.exceptions import GoogleAuthError
    from google.cloud import storage

    try:
        client = storage.Client(project=project)
    except GoogleAuthError as exc:
        raise PermissionError_(
            f"no Google Cloud credentials to {purpose} with ({exc}); "
            "run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS "
            "(for a GCS emulator: set STORAGE_EMULATOR_HOST where this runs)") from exc
    return without_background_lookups(client)


def without_background_lookups(client: Client) -> Client:
    """``client``, made to start no thread of its own: every storage call runs in its caller.

    google-cloud-storage 3.x (googleapis/google-cloud-python#17221) looks a bucket's
    project and location up in a daemon thread the first time a call names the bucket,
    for OpenTelemetry span attributes, whether tracing is on or not. Nothing joins that
    thread: it outlives the upload or download that started it, a failed one too, and on
    a connection error it keeps retrying for up to 120 s (the storage DEFAULT_RETRY; its
    backoff draws from the global ``random``). vxtrain traces nothing, so the lookup is
    a request (needing storage.buckets.get) for nothing. No-op on versions without it.
    """
    # Private, but the only complete switch: every use in the library is guarded by the
    # attribute being truthy, whereas the DISABLE_GCS_PYTHON_CLIENT_OTEL_BUCKET_METADATA
    # environment variable stops only the lookups, not the eviction checks on a 404.
    if getattr(client, "_bucket_metadata_cache", None) is not None:
        client._bucket_metadata_cache = None
    return client


def existing_generation(uri: str, client: Client) -> int | None:
    """The generation of the object at ``uri``, or None when there is none (exit 4 on storage errors)."""
    from google.api_core import exceptions as gexc  # lazy: +60 ms, see the module docstring

    bucket_name, name = split_gs_uri(uri)
    try:
        blob = client.bucket(bucket_name).get_blob(name)
    except gexc.GoogleAPICallError as exc:
        raise mapped_error(exc, bucket_name, uri, "looking up") from exc
    return None if blob is None else int(blob.generation or 0)


def upload_if_missing(path: str | Path, uri: str, client: Client | None = None,
                      progress: UploadProgress | None = None) -> Uploaded:
    """Put the file ``path`` at ``uri`` unless an object is already there (a large one
    tells ``progress`` how far it got)."""
    # lazy: requests and google.api_core (+60 ms) only where a bucket is used: see the module docstring
    import requests
    from google.api_core import exceptions as gexc

    bucket_name, name = split_gs_uri(uri)
    if client is None:
        own = storage_client()
        try:
            return upload_if_missing(path, uri, own, progress)
        finally:
            own.close()  # its HTTP session: no sockets left behind
    try:
        bucket = client.bucket(bucket_name)
        existing = bucket.get_blob(name)
        if existing is not None:
            return Uploaded(uri, int(existing.generation or 0), uploaded=False)
        blob = bucket.blob(name)
        try:
            _upload(blob, Path(path), progress)
        except gexc.PreconditionFailed:  # another submit stored the same content first
            winner = bucket.get_blob(name)
            return Uploaded(uri, int(winner.generation or 0) if winner else 0, uploaded=False)
        return Uploaded(uri, int(blob.generation or 0), uploaded=True)
    except gexc.GoogleAPICallError as exc:
        raise mapped_error(exc, bucket_name, uri, "uploading") from exc
    except requests.exceptions.ConnectionError as exc:
        raise UnavailableError(f"cannot reach Cloud Storage to upload {uri}: {exc}", transient=True) from exc


def _upload(blob: Any, path: Path, progress: UploadProgress | None) -> None:
    size = path.stat().st_size
    display = progress(f"uploading {path.name}", size) if progress and size >= PROGRESS_THRESHOLD else None
    with path.open("rb") as f:
        if display is None:
            blob.upload_from_file(f, size=size, content_type="application/gzip", if_generation_match=0)
            return
        blob.chunk_size = CHUNK_SIZE  # resumable, in chunks: the display moves as they go
        with display as position:
            blob.upload_from_file(_Watched(f, position), size=size, content_type="application/gzip",
                                  if_generation_match=0)


class _Watched:
    """The package file as an upload reads it, telling ``position`` how far it got
    (a resumable upload seeks back to send a chunk again: the position follows)."""

    def __init__(self, file: BinaryIO, position: Position) -> None:
        self._file, self._position = file, position

    def read(self, size: int = -1) -> bytes:
        """Read as the file does, then report the new position."""
        data = self._file.read(size)
        self._position(self._file.tell())
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        """Seek as the file does, then report the new position."""
        at = self._file.seek(offset, whence)
        self._position(at)
        return at

    def tell(self) -> int:
        """The file's position."""
        return self._file.tell()


def mapped_error(exc: Exception, bucket: str, uri: str, doing: str) -> ApiError:
    """A storage error while ``doing`` (uploading, downloading) ``uri`` as vxtrain's API error (exit 4)."""
    from google.api_core import exceptions as gexc  # lazy: +60 ms, see the module docstring

    if isinstance(exc, gexc.NotFound):
        return NotFoundError(
            f"staging bucket gs://{bucket} does not exist ({doing} {uri}); create it "
            f"(`gcloud storage buckets create gs://{bucket} --location=REGION`, in the job's region) "
            "or give another --staging-bucket")
    if isinstance(exc, (gexc.Forbidden, gexc.Unauthorized)):
        return PermissionError_(
            f"not allowed: {doing} {uri} needs storage.objects.get and storage.objects.create "
            f"on gs://{bucket} (e.g. roles/storage.objectAdmin): {getattr(exc, 'message', exc)}")
    if isinstance(exc, (gexc.ServiceUnavailable, gexc.InternalServerError, gexc.TooManyRequests)):
        return UnavailableError(f"{doing} {uri} failed after retries: {exc}", transient=True)
    return ApiError(f"{doing} {uri} failed: {exc}")
