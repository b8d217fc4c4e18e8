"""The bad cases of a submit that builds an image: each a clear message and exit 4 (a
missing wheel: exit 1), never a traceback, and no job created."""
from __future__ import annotations

import io
import socket
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.images.conftest import push_base
from tests.images.test_end_to_end import write_project
from tests.incli import run
from vxtrain import api
from vxtrain.backends.emulator import start_emulator
from vxtrain.errors import ApiError, NotFoundError, PermissionError_, SpecError, UnavailableError
from vxtrain.images.dependencies import DependencyError
from vxtrain.images.reference import parse
from vxtrain.images.registry import mapped_error

pytestmark = pytest.mark.slow


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens


def _submit_and_count(spec: Path) -> tuple[Exception, int]:
    """Submit to an emulator; the error raised and how many jobs the emulator then has."""
    with start_emulator(workdir=spec.parent, out=io.StringIO(), environ={}) as handle:
        with pytest.raises(Exception) as err:
            api.submit(spec, endpoint=handle.address, idempotency_key=uuid.uuid4().hex)
        jobs = handle.jobs()
    return err.value, len(jobs)


def test_an_unreachable_registry(tmp_path: Path, registry: str, wheels: Path) -> None:
    base = push_base(registry, "base/err", "py310")
    spec = write_project(tmp_path, base.ref, f"127.0.0.1:{_closed_port()}")
    error, jobs = _submit_and_count(spec)
    assert isinstance(error, UnavailableError) and error.exit_code == 4 and jobs == 0
    assert "cannot reach the registry 127.0.0.1:" in str(error)


class _Refusing(BaseHTTPRequestHandler):
    """A registry that refuses everyone: 401 with a Basic challenge."""

    def _refuse(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="registry"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_HEAD = do_POST = do_PUT = _refuse

    def log_message(self, *args: Any) -> None:
        """Quiet."""


def test_an_unauthorised_registry(tmp_path: Path, registry: str, wheels: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = push_base(registry, "base/unauth", "py310")
        spec = write_project(tmp_path, base.ref, f"127.0.0.1:{server.server_address[1]}")
        error, jobs = _submit_and_count(spec)
    finally:
        server.shutdown()
        server.server_close()
    assert isinstance(error, PermissionError_) and error.exit_code == 4 and jobs == 0
    assert "refused" in str(error) and "HTTP 401" in str(error)
    assert "without credentials: run it without auth" in str(error)  # what to do, for this kind of host


@pytest.mark.parametrize(("host", "hint"), [("us-docker.pkg.dev", "gcloud auth application-default login"),
                                            ("ghcr.io", "signs in only to Google's registries")])
def test_a_refusal_says_what_to_do_for_the_host(host: str, hint: str) -> None:
    refused = requests.Response()
    refused.status_code = 403
    error = mapped_error(requests.HTTPError(response=refused), parse(f"{host}/p/r/img"), "pushing x")
    assert isinstance(error, PermissionError_) and "HTTP 403" in str(error) and hint in str(error)


def test_a_base_that_does_not_exist(tmp_path: Path, registry: str, wheels: Path) -> None:
    spec = write_project(tmp_path, f"{registry}/base/nothing:py310", registry, "nobase")
    error, jobs = _submit_and_count(spec)
    assert isinstance(error, NotFoundError) and error.exit_code == 4 and jobs == 0
    assert f"base image {registry}/base/nothing:py310 does not exist" in str(error)


@pytest.mark.parametrize("index", [True, False], ids=["index", "manifest"])
def test_a_base_for_another_platform_only(tmp_path: Path, registry: str, wheels: Path, index: bool) -> None:
    """A spec mistake found at push time: exit 1 at the spec's build.base, not an API error."""
    base = push_base(registry, f"base/arm-{str(index).lower()}", "py310", arch="arm64", index=index)
    spec = write_project(tmp_path, base.ref, registry, "arm")
    error, jobs = _submit_and_count(spec)
    assert isinstance(error, SpecError) and not isinstance(error, ApiError) and error.exit_code == 1 and jobs == 0
    assert "linux/amd64" in str(error) and "arm64" in str(error)


def test_a_requirement_without_a_wheel_is_named(tmp_path: Path, registry: str, wheels: Path) -> None:
    base = push_base(registry, "base/nowheel", "py310")
    spec = write_project(tmp_path, base.ref, registry, "nowheel")
    (tmp_path / "requirements.txt").write_text("tinydep==1.0\nnot-a-wheel-anywhere==2.0\n")
    error, jobs = _submit_and_count(spec)
    assert isinstance(error, DependencyError) and jobs == 0
    assert "not-a-wheel-anywhere==2.0" in str(error) and "linux/amd64" in str(error)


def test_no_repository_is_a_located_error(tmp_path: Path, registry: str) -> None:
    spec = write_project(tmp_path, f"{registry}/base/x:py310", registry)
    spec.write_text("\n".join(line for line in spec.read_text().splitlines() if "image_repository" not in line))
    assert api.plan(spec).images[0].uri.startswith("<image_repository>/src:")  # plan shows it anyway
    error, jobs = _submit_and_count(spec)
    assert isinstance(error, SpecError) and jobs == 0
    diag = error.diagnostics[0]
    assert diag.code == "no-image-repository" and (diag.path, diag.line) == ("chief.build", 4) and "--image-repository" in diag.message


def test_the_cli_says_it_in_one_line_with_exit_4(tmp_path: Path, registry: str, wheels: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_project(tmp_path, f"{registry}/base/nothing:py310", registry, "cli")
    with start_emulator(workdir=spec.parent, out=io.StringIO(), environ={}) as handle:
        code, out, err = run(capsys, "submit", str(spec), "--endpoint", handle.address, "--output", "json")
        assert handle.jobs() == []
    assert code == 4 and "Traceback" not in err and "does not exist" in err
    assert out["error"]["type"] == "NotFoundError" and out["error"]["exit_code"] == 4


def test_the_image_repository_flag_wins(tmp_path: Path, registry: str) -> None:
    spec = write_project(tmp_path, f"{registry}/base/x:py310", registry)
    images: Any = api.plan(spec, api.Options(image_repository="localhost:5000/other")).images
    assert images[0].uri.startswith("localhost:5000/other/src:")
