"""Pushing against the real registry: base layers mounted on one host and copied across hosts,
two submits at once, the progress display, and the credentials each host gets."""
from __future__ import annotations

import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.images.conftest import digest, get_blob, get_manifest, push_base
from tests.images.test_end_to_end import write_project
from vxtrain import api
from vxtrain.images import registry as registry_module
from vxtrain.errors import VxtrainError
from vxtrain.images.publish import publish
from vxtrain.images.reference import parse
from vxtrain.images.registry import GOOGLE_USER, Repository
from vxtrain.packaging.upload import Position

pytestmark = pytest.mark.slow


def test_base_layers_are_mounted_on_one_host(tmp_path: Path, registry: str, wheels: Path) -> None:
    base = push_base(registry, "base/mount", "py310")
    said: list[str] = []
    [pushed] = publish(api.plan(write_project(tmp_path, base.ref, registry, "mount")).images, say=said.append)
    assert base.layer_digest not in pushed.blobs
    assert any("mounted base layer" in line for line in said), said
    assert digest(get_blob(registry, "mount/src", base.layer_digest)) == base.layer_digest


def test_base_layers_are_copied_once_across_hosts(tmp_path: Path, registry: str, wheels: Path) -> None:
    """``localhost:PORT`` and ``127.0.0.1:PORT`` are two hosts to a client: no mount, a streamed copy."""
    base = push_base(registry, "base/copy", "py310")
    other_host = base.ref.replace("127.0.0.1", "localhost")
    said: list[str] = []
    [pushed] = publish(api.plan(write_project(tmp_path, other_host, registry, "copy")).images, say=said.append)
    assert pushed.blobs[0] == base.layer_digest and any("copying base layer" in line for line in said)
    assert get_blob(registry, "copy/src", base.layer_digest) == get_blob(registry, "base/copy", base.layer_digest)
    (tmp_path / "src" / "trainer" / "task.py").write_text("print('v2')\n")
    [again] = publish(api.plan(tmp_path / "job.yaml").images)
    assert base.layer_digest not in again.blobs  # copied once


def test_two_submits_at_once_push_the_same_image(tmp_path: Path, registry: str, wheels: Path) -> None:
    base = push_base(registry, "base/race", "py310")
    spec = write_project(tmp_path, base.ref, registry, "race")
    images = [api.plan(spec).images for _ in range(2)]
    results: list[Any] = [None, None]
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            results[i] = publish(images[i])[0]
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert results[0].digest == results[1].digest
    manifest, body, _ = get_manifest(registry, "race/src", images[0][0].tag)
    assert digest(body) == results[0].digest
    for layer in manifest["layers"]:
        assert digest(get_blob(registry, "race/src", layer["digest"])) == layer["digest"]


def test_a_large_blob_reports_its_progress(tmp_path: Path, registry: str, wheels: Path) -> None:
    base = push_base(registry, "base/progress", "py310")
    spec = write_project(tmp_path, base.ref, registry, "progress")
    (tmp_path / "src" / "weights.bin").write_bytes(os.urandom(3 * 1024 * 1024))  # gzip cannot shrink it
    seen: list[tuple[str, int, list[int]]] = []

    @contextmanager
    def watch(description: str, size: int) -> Iterator[Position]:
        positions: list[int] = []
        seen.append((description, size, positions))
        yield positions.append

    publish(api.plan(spec).images, progress=watch)
    [(description, size, positions)] = seen  # only the big code layer is watched
    assert description.startswith("pushing ") and size > 3 * 1024 * 1024
    assert positions[-1] == size and positions == sorted(positions)


class _Client:
    """Stands in for dxf's client in the auth callback: records what it is asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def authenticate(self, username: str | None = None, password: str | None = None, **kwargs: Any) -> None:
        self.calls.append((username, password, kwargs.get("actions")))


@pytest.mark.parametrize(("host", "user"), [("us-central1-docker.pkg.dev", GOOGLE_USER), ("gcr.io", GOOGLE_USER),
                                             ("ghcr.io", None)])
def test_google_hosts_get_the_adc_token_others_the_anonymous_one(host: str, user: str | None) -> None:
    repo = Repository(parse(f"{host}/p/r/img:1"), push=True, token=lambda: "ADC-TOKEN")
    client = _Client()
    repo._auth(client, requests.Response())  # type: ignore[arg-type]
    expected = (user, "ADC-TOKEN" if user else None, ["push", "pull"])
    assert client.calls == [expected]


def test_a_loopback_registry_is_plain_http_without_auth(registry: str) -> None:
    repo = Repository(parse(f"{registry}/x/y:1"), push=False)
    assert repo.dxf._base_url.startswith("http://") and repo.dxf._auth is None
    remote = Repository(parse("us-docker.pkg.dev/p/r/y:1"), push=False)
    assert remote.dxf._base_url.startswith("https://") and remote.dxf._auth is not None
    assert registry_module.google_token is not None


def test_no_google_credentials_is_a_clear_permission_error() -> None:
    """The suite has none (tests/conftest.py): the ADC lookup fails the way a user would see it."""
    from vxtrain.errors import PermissionError_

    with pytest.raises(PermissionError_, match="gcloud auth application-default login"):
        registry_module.google_token()


def test_the_suite_s_guard_refuses_google_s_registries(tmp_path: Path) -> None:
    """A push to Artifact Registry from a test never leaves the machine (tests/conftest.py)."""
    from tests.conftest import NetworkGuardError
    from vxtrain.images.publish import publish_one

    (tmp_path / "src").mkdir()
    spec = tmp_path / "job.yaml"
    spec.write_text("display_name: t\nimage_repository: us-central1-docker.pkg.dev/p/r\nchief:\n"
                    "  machine_type: n1-standard-4\n  build: {base: 'python:3.10', source: src}\n")
    [image] = api.plan(spec).images
    with pytest.raises(NetworkGuardError):
        publish_one(image, print, None)


class _TokenServer:
    """Stands in for the registry's token endpoint (dxf's session): records each GET."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, str]]] = []

    def get(self, url: str, headers: dict[str, str] | None = None, **kwargs: Any) -> requests.Response:
        self.calls.append((url, dict(headers or {})))
        response = requests.Response()
        response.status_code, response._content = 200, b'{"token": "REGISTRY-TOKEN"}'
        return response


@pytest.mark.parametrize(("challenge", "query"), [
    ('Bearer realm="https://europe-docker.pkg.dev/v2/token"', "scope=repository%3Ap%2Fr%2Fimg%3Apush%2Cpull"),
    ('Bearer realm="https://europe-docker.pkg.dev/v2/token",service="europe-docker.pkg.dev"',
     "service=europe-docker.pkg.dev&scope=repository%3Ap%2Fr%2Fimg%3Apush%2Cpull"),
])
def test_the_bearer_challenge_with_or_without_service(challenge: str, query: str) -> None:
    """Artifact Registry's multi-region hosts may send a realm without ``service``."""
    import base64

    repo = Repository(parse("europe-docker.pkg.dev/p/r/img:1"), push=True, token=lambda: "ADC-TOKEN")
    server = _TokenServer()
    repo.dxf._sessions[0] = server  # type: ignore[assignment]
    unauthorized = requests.Response()
    unauthorized.status_code = 401
    unauthorized.headers["WWW-Authenticate"] = challenge
    repo._auth(repo.dxf, unauthorized)
    [(url, headers)] = server.calls
    assert url == f"https://europe-docker.pkg.dev/v2/token?{query}"
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"oauth2accesstoken:ADC-TOKEN").decode()
    assert repo.dxf.token == "REGISTRY-TOKEN"


class _Recording(BaseHTTPRequestHandler):
    """A proxy in front of the real registry that records each request's method, path and
    body framing, and refuses a chunked body (Artifact Registry takes no chunked uploads)."""

    upstream = ""
    seen: list[tuple[str, str, str | None, str | None]] = []

    def _forward(self) -> None:
        length, chunked = self.headers.get("Content-Length"), self.headers.get("Transfer-Encoding")
        self.seen.append((self.command, self.path.split("?")[0], length, chunked))
        if chunked:
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = self.rfile.read(int(length)) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("content-length",)}
        r = requests.request(self.command, f"http://{self.upstream}{self.path}", data=body, headers=headers,
                             allow_redirects=False, timeout=30)
        self.send_response(r.status_code)
        for k, v in r.headers.items():
            if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(k, v)
        content = b"" if self.command == "HEAD" else r.content
        self.send_header("Content-Length", r.headers.get("Content-Length", "0") if self.command == "HEAD"
                         else str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = _forward

    def log_message(self, *args: Any) -> None:
        """Quiet."""


def test_every_upload_is_one_put_with_a_content_length(tmp_path: Path, registry: str, wheels: Path) -> None:
    """A copied base layer (streamed from another host), our layers and the config: each a
    monolithic PUT ?digest= with its length, never a chunked body nor a PATCH."""
    base = push_base(registry, "base/mono", "py310")
    _Recording.upstream, _Recording.seen = registry, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recording)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        proxy = f"127.0.0.1:{server.server_address[1]}"
        [pushed] = publish(api.plan(write_project(tmp_path, base.ref.replace("127.0.0.1", "localhost"),
                                                  proxy, "mono")).images)
    finally:
        server.shutdown()
        server.server_close()
    puts = [(length, chunked) for method, path, length, chunked in _Recording.seen
            if method == "PUT" and "/blobs/uploads/" in path]
    assert len(puts) == len(pushed.blobs) == 4  # the base layer, the dependency and code layers, the config
    assert all(length is not None and int(length) > 0 and chunked is None for length, chunked in puts), puts
    assert not [s for s in _Recording.seen if s[0] == "PATCH"]
    assert digest(get_blob(registry, "mono/src", base.layer_digest)) == base.layer_digest


def test_a_folder_edited_after_its_tag_was_computed_pushes_nothing(tmp_path: Path, registry: str,
                                                                    wheels: Path) -> None:
    """The tag names the files as hashed; the layer is written later (after pip): when they
    differ by then, pushing would put other code under the tag, reused by every later submit."""
    base = push_base(registry, "base/edited", "py310")
    images = api.plan(write_project(tmp_path, base.ref, registry, "edited")).images
    (tmp_path / "src" / "trainer" / "task.py").write_text("print('edited since plan')\n")
    with pytest.raises(VxtrainError, match="changed while it was being built"):
        publish(images)
    _, _, response = get_manifest(registry, "edited/src", images[0].tag)
    assert response.status_code == 404
