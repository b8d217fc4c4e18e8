"""Uploading a package once, against a real GCS emulator (fake-gcs-server) with the real client."""
from __future__ import annotations

import io
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from vxtrain.errors import NotFoundError, PermissionError_
from vxtrain.packaging.upload import (CHUNK_SIZE, PROGRESS_THRESHOLD, Position, split_gs_uri, storage_client,
                                      upload_if_missing, without_background_lookups)
from vxtrain.render.packaging import upload_bar

pytestmark = pytest.mark.slow


@pytest.fixture
def package(tmp_path: Path) -> Path:
    path = tmp_path / "trainer-0123456789abcdef.tar.gz"
    path.write_bytes(b"not really gzip, the bytes are what counts" * 100)
    return path


def test_the_emulator_enforces_the_precondition_this_relies_on(gcs: Any, bucket: str) -> None:
    """If the emulator accepted a second if_generation_match=0 write, 'upload once' would be untestable."""
    from google.api_core.exceptions import PreconditionFailed

    blob = gcs.bucket(bucket).blob("x")
    blob.upload_from_string(b"1", if_generation_match=0)
    with pytest.raises(PreconditionFailed):
        gcs.bucket(bucket).blob("x").upload_from_string(b"2", if_generation_match=0)


def test_uploads_when_missing_and_never_again(gcs: Any, bucket: str, package: Path) -> None:
    uri = f"gs://{bucket}/staging/vxtrain-packages/{package.name}"
    first = upload_if_missing(package, uri, client=gcs)
    assert first.uploaded and first.generation > 0
    blob = gcs.bucket(bucket).get_blob(f"staging/vxtrain-packages/{package.name}")
    assert blob.download_as_bytes() == package.read_bytes() and blob.generation == first.generation
    package.write_bytes(b"other bytes: must not replace the stored object")
    second = upload_if_missing(package, uri, client=gcs)
    assert (second.uploaded, second.generation) == (False, first.generation)
    assert gcs.bucket(bucket).get_blob(blob.name).download_as_bytes() != package.read_bytes()


def test_losing_the_race_is_not_an_error(gcs: Any, bucket: str, package: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Another submit stores the object between our existence check and our upload."""
    from google.cloud.storage import Bucket

    uri = f"gs://{bucket}/vxtrain-packages/{package.name}"
    real_get_blob = Bucket.get_blob
    calls = []

    def get_blob_then_race(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        found = real_get_blob(self, name, *args, **kwargs)
        if not calls:  # the first check says "missing"; then the other submit wins
            calls.append(name)
            gcs.bucket(bucket).blob(name).upload_from_string(b"winner", if_generation_match=0)
        return found

    monkeypatch.setattr(Bucket, "get_blob", get_blob_then_race)
    result = upload_if_missing(package, uri, client=gcs)
    assert not result.uploaded and result.generation > 0
    assert gcs.bucket(bucket).blob(f"vxtrain-packages/{package.name}").download_as_bytes() == b"winner"


def test_concurrent_uploads_store_one_object(gcs: Any, bucket: str, package: Path) -> None:
    uri = f"gs://{bucket}/vxtrain-packages/{package.name}"
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(upload_if_missing(package, uri, client=gcs)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and sum(r.uploaded for r in results) == 1
    assert len({r.generation for r in results}) == 1


def test_the_default_client_is_anonymous_on_the_emulator(gcs: Any, bucket: str, package: Path) -> None:
    """STORAGE_EMULATOR_HOST is all vxtrain needs: no credentials, no project lookups."""
    assert upload_if_missing(package, f"gs://{bucket}/p/{package.name}").uploaded


def test_missing_bucket_is_an_api_error_that_says_what_to_do(gcs: Any, package: Path) -> None:
    with pytest.raises(NotFoundError) as err:
        upload_if_missing(package, f"gs://no-such-bucket-vxtrain/{package.name}", client=gcs)
    assert err.value.exit_code == 4
    assert "gs://no-such-bucket-vxtrain does not exist" in str(err.value) and "--staging-bucket" in str(err.value)


def test_an_upload_starts_no_thread_even_when_it_fails(gcs_server_url: str, package: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """google-cloud-storage 3.x looks a bucket up in a thread nothing joins (for tracing):
    vxtrain's clients turn that off, or a failed upload leaves it retrying for minutes."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server_url)
    started: list[str] = []
    real_start = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        started.append(thread.name)
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    uri = f"gs://no-such-bucket-vxtrain/{package.name}"
    client = storage_client()
    try:
        with pytest.raises(NotFoundError):
            upload_if_missing(package, uri, client=client)
    finally:
        client.close()
    with pytest.raises(NotFoundError):
        upload_if_missing(package, uri)  # with the client it makes itself
    assert started == []


def test_permission_denied_is_an_api_error_naming_the_permissions(package: Path) -> None:
    """fake-gcs-server has no IAM, so a 403 comes from a one-line local HTTP server."""
    import http.server

    class Forbidden(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server hook name
            body = b'{"error": {"code": 403, "message": "caller does not have storage.objects.get"}}'
            self.send_response(403)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Forbidden)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        client = without_background_lookups(storage.Client(
            project="p", credentials=AnonymousCredentials(),
            client_options={"api_endpoint": f"http://127.0.0.1:{server.server_port}"}))
        with pytest.raises(PermissionError_) as err:
            upload_if_missing(package, f"gs://b/{package.name}", client=client)
        client.close()
    finally:
        server.shutdown()
        server.server_close()
    assert err.value.exit_code == 4 and "storage.objects.create" in str(err.value)


@pytest.fixture
def large(tmp_path: Path) -> Path:
    """A package past PROGRESS_THRESHOLD: its upload goes in chunks (the last one short)."""
    path = tmp_path / "big-0123456789abcdef.tar.gz"
    path.write_bytes(os.urandom(PROGRESS_THRESHOLD + CHUNK_SIZE // 2))
    return path


def test_a_large_upload_tells_its_watcher_how_far_it_got(gcs: Any, bucket: str, large: Path) -> None:
    watched: list[tuple[str, int]] = []
    positions: list[int] = []

    @contextmanager
    def watch(description: str, size: int) -> Iterator[Position]:
        watched.append((description, size))
        yield positions.append

    size = large.stat().st_size
    result = upload_if_missing(large, f"gs://{bucket}/p/{large.name}", client=gcs, progress=watch)
    assert result.uploaded and watched == [(f"uploading {large.name}", size)]
    assert positions[-1] == size and {CHUNK_SIZE, 2 * CHUNK_SIZE} <= set(positions)  # chunk by chunk
    assert gcs.bucket(bucket).get_blob(f"p/{large.name}").download_as_bytes() == large.read_bytes()


def test_a_small_upload_is_not_watched(gcs: Any, bucket: str, package: Path) -> None:
    def watch(description: str, size: int) -> None:
        raise AssertionError(f"a {size}-byte upload asked for a display")

    assert upload_if_missing(package, f"gs://{bucket}/p/{package.name}", client=gcs, progress=watch).uploaded


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_command_line_draws_a_bar_on_a_terminal_only(gcs: Any, bucket: str, large: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """render.packaging.upload_bar, the CLI's UploadProgress: nothing off a terminal, a bar on one."""
    assert upload_bar("uploading x", 1) is None  # pytest captures stderr: not a terminal
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert upload_if_missing(large, f"gs://{bucket}/p/{large.name}", client=gcs, progress=upload_bar).uploaded
    assert f"uploading {large.name}" in terminal.getvalue()


def test_split_gs_uri() -> None:
    assert split_gs_uri("gs://b/a/c.tar.gz") == ("b", "a/c.tar.gz")
    with pytest.raises(ValueError):
        split_gs_uri("s3://b/x")
