"""One repository of a registry, through python-dxf: the OCI distribution API calls
an append needs (https://github.com/opencontainers/distribution-spec/blob/main/spec.md).

dxf does the Bearer token flow (the ``WWW-Authenticate`` challenge, with or
without ``service``), manifest GET/HEAD/PUT, blob HEAD, mount and the monolithic
upload (POST, then one PUT ``?digest=``: Artifact Registry takes no chunked
uploads, https://cloud.google.com/artifact-registry/docs/docker/pushing-and-pulling).
Where it is not enough, docs/decisions.md says why we go by hand (a streamed
copy with a Content-Length; which credentials each host gets).

Credentials: a loopback registry (``127.0.0.1:PORT``, ``localhost:PORT``) is
spoken to over plain HTTP without auth; Google's hosts get Application Default
Credentials' access token as the password of ``oauth2accesstoken``; any other
host gets the anonymous token (public bases). Errors become vxtrain's ApiError
tree here (exit 4), naming the registry and what to do.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import google.auth
import requests
from dxf import DXF, DXFBase
from dxf import exceptions as dxf_errors
from google.auth.exceptions import GoogleAuthError
from google.auth.transport.requests import Request

from vxtrain.errors import ApiError, NotFoundError, PermissionError_, UnavailableError
from vxtrain.images.layers import digest_of
from vxtrain.images.reference import Reference
from vxtrain.packaging.upload import Position, UploadProgress

#: Seconds to wait for a registry to answer (connect, and between bytes).
TIMEOUT = 60.0
#: OAuth scope of the ADC token that Artifact Registry accepts.
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
#: The username that goes with an access token on Google's registries.
GOOGLE_USER = "oauth2accesstoken"
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")
#: Bytes read from a layer file per piece of its upload.
UPLOAD_CHUNK = 1024 * 1024
#: Blobs at least this big report their upload to the progress display.
PROGRESS_THRESHOLD = 1024 * 1024


def google_token() -> str:
    """An access token from Application Default Credentials (PermissionError_ when there are none)."""
    try:
        creds, _ = google.auth.default(scopes=[CLOUD_PLATFORM])
        creds.refresh(Request())  # type: ignore[no-untyped-call]  # google-auth's refresh is unannotated
    except GoogleAuthError as exc:
        raise PermissionError_(
            f"no Google Cloud credentials to push images with ({exc}); run `gcloud auth "
            "application-default login` or set GOOGLE_APPLICATION_CREDENTIALS") from exc
    return str(creds.token)


class Repository:
    """One repository (``ref.host``/``ref.repository``) of a registry."""

    def __init__(self, ref: Reference, *, push: bool, token: Callable[[], str] = google_token) -> None:
        self.ref, self._token = ref, token
        self._actions = ["push", "pull"] if push else ["pull"]  # push first: some registries read one scope
        self.dxf = DXF(ref.host, ref.repository, auth=None if ref.loopback else self._auth,
                       insecure=ref.loopback, timeout=TIMEOUT)

    def _auth(self, client: DXFBase, response: requests.Response) -> None:
        """dxf's callback on a 401: answer the registry's challenge with this host's credentials."""
        if self.ref.google:
            client.authenticate(GOOGLE_USER, self._token(), actions=self._actions, response=response)
        else:
            client.authenticate(actions=self._actions, response=response)

    def _call(self, doing: str, call: Callable[[], Any]) -> Any:
        """``call()``, its registry errors mapped to vxtrain's (``doing`` says what failed)."""
        try:
            return call()
        except (requests.RequestException, dxf_errors.DXFError) as exc:
            raise mapped_error(exc, self.ref, doing) from exc

    def _found(self, doing: str, call: Callable[[], Any]) -> Any | None:
        """``call()``, or None when the registry answers 404 (a HEAD of what is not there);
        its other errors mapped as ``_call`` maps them."""
        try:
            return call()
        except (requests.RequestException, dxf_errors.DXFError) as exc:
            response = getattr(exc, "response", None)
            if isinstance(exc, requests.HTTPError) and response is not None and response.status_code == 404:
                return None
            raise mapped_error(exc, self.ref, doing) from exc

    def manifest_digest(self, alias: str) -> str | None:
        """The digest of the manifest ``alias`` names (HEAD), or None when there is none."""
        found = self._found(f"looking up the manifest {alias}", lambda: self.dxf.head_manifest_and_response(alias))
        if found is None:
            return None
        digest, _ = found
        if digest:
            return str(digest)
        # No Docker-Content-Digest (optional in the spec): the digest of the bytes it serves.
        _, response = self._call(f"reading the manifest {alias}", lambda: self.dxf.get_manifest_and_response(alias))
        return digest_of(response.content)

    def manifest(self, alias: str) -> tuple[dict[str, Any], str]:
        """The manifest ``alias`` names, and its Content-Type."""
        text, response = self._call(f"reading the manifest {alias}", lambda: self.dxf.get_manifest_and_response(alias))
        return json.loads(text), str(response.headers.get("Content-Type", ""))

    def blob_json(self, digest: str) -> dict[str, Any]:
        """A small JSON blob (an image config), read whole."""
        data = self._call(f"reading {digest}", lambda: b"".join(self.pull(digest)))
        return json.loads(data)  # type: ignore[no-any-return]

    def has_blob(self, digest: str) -> bool:
        """True when the repository has the blob (HEAD → 200)."""
        return self._found(f"looking up {digest}", lambda: self.dxf.blob_size(digest)) is not None

    def mount(self, digest: str, source: Reference) -> bool:
        """Mount ``digest`` from ``source``'s repository (same host only); False when the
        registry answers with an upload session instead (the spec's 202 fallback)."""
        try:
            self.dxf.mount_blob(source.repository, digest)
        except (requests.RequestException, dxf_errors.DXFError):
            return False  # any refusal: copy instead (ggcr retries "without mount" the same way)
        return True

    def push_file(self, path: Path, digest: str, size: int, progress: UploadProgress | None) -> None:
        """Upload the file ``path`` (monolithic, streamed from disk) under ``digest``, known
        from when it was written: dxf's ``push_blob(filename)`` would read the whole file
        once more to hash it before sending it (one more pass over a layer of gigabytes)."""
        with _display(progress, f"pushing {digest[7:19]}", size) as position, path.open("rb") as f:
            body = _Sized(iter(lambda: f.read(UPLOAD_CHUNK), b""), size, position)
            self._call(f"pushing {digest}", lambda: self.dxf.push_blob(data=body, digest=digest, check_exists=False))

    def push_stream(self, chunks: Iterable[bytes], digest: str, size: int, progress: UploadProgress | None) -> None:
        """Upload ``size`` bytes as they come from ``chunks`` (a blob copied from another registry)."""
        with _display(progress, f"copying {digest[7:19]}", size) as position:
            body = _Sized(chunks, size, position)
            self._call(f"pushing {digest}", lambda: self.dxf.push_blob(data=body, digest=digest, check_exists=False))

    def push_bytes(self, data: bytes, digest: str) -> None:
        """Upload a small blob (the config)."""
        self._call(f"pushing {digest}", lambda: self.dxf.push_blob(data=_Sized([data], len(data), _ignore),
                                                                   digest=digest, check_exists=False))

    def pull(self, digest: str) -> Iterable[bytes]:
        """The blob's bytes as they arrive (never held whole)."""
        return self._call(f"reading {digest}", lambda: self.dxf.pull_blob(digest, chunk_size=1024 * 1024))  # type: ignore[no-any-return]

    def put_manifest(self, tag: str, manifest: bytes) -> None:
        """PUT the manifest, byte for byte, under ``tag``."""
        self._call(f"pushing the manifest {tag}", lambda: self.dxf.set_manifest(tag, manifest.decode()))


def _ignore(_position: int) -> None:
    return None


def _display(progress: UploadProgress | None, description: str, size: int) -> AbstractContextManager[Position]:
    shown = progress(description, size) if progress is not None and size >= PROGRESS_THRESHOLD else None
    return shown if shown is not None else nullcontext(_ignore)


class _Sized:
    """An upload body: the chunks of a blob with its length known, so requests sends a
    Content-Length (one monolithic PUT) instead of a chunked transfer."""

    def __init__(self, chunks: Iterable[bytes], size: int, position: Position) -> None:
        self._chunks, self._size, self._position = chunks, size, position

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[bytes]:
        sent = 0
        for chunk in self._chunks:
            sent += len(chunk)
            self._position(sent)
            yield chunk


def _reason(exc: Exception) -> str:
    """The OS's words for a failed connection ("Connection refused"), not urllib3's retry story."""
    if isinstance(exc, requests.Timeout):
        return f"no answer within {TIMEOUT:.0f} s"
    found = _ERRNO.search(str(exc))
    return found.group(1).strip() if found else str(exc)


def _access_hint(ref: Reference) -> str:
    """What to do when ``ref``'s registry refuses: it depends on which credentials it got."""
    if ref.google:
        return ("run `gcloud auth application-default login` and check that you have "
                "roles/artifactregistry.writer on the repository")
    if ref.loopback:
        return "a registry on this machine is spoken to without credentials: run it without auth"
    return ("vxtrain signs in only to Google's registries (*-docker.pkg.dev, gcr.io); others are reached "
            "anonymously, so use a public base there and push to Artifact Registry")


def mapped_error(exc: Exception, ref: Reference, doing: str) -> ApiError:
    """A registry error while ``doing`` something in ``ref``'s repository, as vxtrain's (exit 4)."""
    where = f"{ref.host}/{ref.repository}"
    if isinstance(exc, requests.ConnectionError | requests.Timeout):
        return UnavailableError(f"cannot reach the registry {ref.host} ({doing} in {where}): {_reason(exc)}; "
                                "check the host name and the network (or start the local registry)",
                                transient=True)
    status = exc.response.status_code if isinstance(exc, requests.HTTPError) and exc.response is not None else None
    if status in (401, 403) or isinstance(exc, dxf_errors.DXFUnauthorizedError | dxf_errors.DXFAuthInsecureError):
        return PermissionError_(f"the registry {ref.host} refused {doing} in {where} (HTTP {status or 401}): "
                                f"{_access_hint(ref)}")
    if status == 404:
        return NotFoundError(f"not found: {doing} in {where} (HTTP 404)")
    return ApiError(f"the registry {ref.host} failed {doing} in {where}: {exc}")
