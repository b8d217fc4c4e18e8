"""Shared fixtures. The guard against reaching Google lives here (see below)."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"


@pytest.fixture
def configs_dir() -> Path:
    """The repository's configs/ folder."""
    return CONFIGS


# --- the no-Google guard ---------------------------------------------------------
# No test may reach a Google endpoint (pre-commit's pattern: the dangerous
# default raises in tests). Three layers:
#   1. VXTRAIN_NO_GOOGLE=1: vxtrain.backends.vertex refuses any endpoint that is
#      not loopback (gRPC opens its sockets in C, below any Python patch); and
#      for any other gRPC channel (a test building a JobServiceClient or a
#      CloudQuotasClient itself),
#      grpc_proxy sends every non-loopback connection to a closed local port,
#      so gRPC's C core never even resolves a Google name;
#   2. a socket guard: Python-level connects and name lookups of non-loopback
#      hosts raise (google-auth's metadata-server probe, token refresh, …);
#   3. no credentials to find: GOOGLE_APPLICATION_CREDENTIALS points nowhere,
#      gcloud's config dir is empty, the metadata server is a closed local port.
# Container registries (vxtrain.images: python-dxf over requests) are Python
# sockets, so layer 2 refuses Artifact Registry and gcr.io hosts (a test proves
# it, tests/images/test_push.py); the tests' registry is on loopback, and pip
# building a dependency layer gets PIP_NO_INDEX + PIP_FIND_LINKS from the tests
# (tests/images/conftest.py: the `wheels` fixture), so it reaches no index.
# A test that really must talk to Google opts in with @pytest.mark.allow_google.

import ipaddress
import os
import socket
import tempfile
from collections.abc import Iterator
from typing import Any

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


class NetworkGuardError(RuntimeError):
    """A test tried to reach a non-loopback address (the suite's no-Google guard)."""


def _host_is_local(host: Any) -> bool:
    """Loopback names/addresses and the wildcard (binds) pass; a host given as
    bytes is judged by its text (getaddrinfo(b"googleapis.com") is a lookup too)."""
    if host is None:
        return True
    if isinstance(host, (bytes, bytearray)):
        host = bytes(host).decode("utf-8", "replace")
    text = str(host).strip("[]")
    if text in ("", "0.0.0.0", "::") or text.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(text.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _check_address(address: Any) -> None:
    if isinstance(address, tuple) and address and not _host_is_local(address[0]):
        raise NetworkGuardError(f"test tried to connect to {address!r}: only loopback is allowed "
                                f"(mark the test allow_google to opt in)")


def pytest_configure(config: pytest.Config) -> None:
    """Environment for every test (and the processes tests start): no way to Google.
    Thread pools are numbered as they are made, for the leak check (tests/leaks.py)."""
    from tests import leaks

    leaks.number_pools()
    config.addinivalue_line("markers", "allow_google: the test may reach Google endpoints (none should)")
    empty = tempfile.mkdtemp(prefix="vxtrain-no-google-")
    os.environ["VXTRAIN_NO_GOOGLE"] = "1"
    os.environ["GOOGLE_APPLICATION_CREDENTIALS"] = os.path.join(empty, "no-such-credentials.json")
    os.environ["CLOUDSDK_CONFIG"] = empty
    os.environ["GCE_METADATA_HOST"] = "127.0.0.1:9"  # discard port: nothing answers
    os.environ["GCE_METADATA_IP"] = "127.0.0.1:9"
    os.environ["NO_GCE_CHECK"] = "True"
    # gRPC's C core honours these (doc/environment_variables.md in grpc/grpc):
    # a channel to anything but loopback goes through a "proxy" on the discard port.
    os.environ["grpc_proxy"] = "http://127.0.0.1:9"
    os.environ["no_grpc_proxy"] = "localhost,127.0.0.1,::1"
    for name in ("GOOGLE_CLOUD_PROJECT", "CLOUD_ML_REGION", "GOOGLE_CLOUD_REGION", "CLOUDSDK_CORE_PROJECT",
                 "CLOUDSDK_AI_REGION", "CLOUDSDK_ACTIVE_CONFIG_NAME"):
        os.environ.pop(name, None)  # the developer's defaults (and gcloud's) must not leak into tests
    # vxtrain's caches (the compiled schema validator) go to a folder of this run,
    # never into the developer's ~/.cache.
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="vxtrain-cache-")
    # Every emulator a test starts (in process or a `vxtrain emulator` subprocess) asks
    # each call for this bearer token, and vxtrain's clients (and the processes tests
    # start) send it; tests/backends/emulator/test_emulator_auth.py drops it to test the token file.
    import secrets

    os.environ["VXTRAIN_EMULATOR_TOKEN"] = secrets.token_urlsafe(32)
    os.environ.pop("XDG_RUNTIME_DIR", None)  # token files, if any, go under XDG_CACHE_HOME above


@pytest.fixture(autouse=True)
def _no_google(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Refuse non-loopback connects and lookups unless the test is marked allow_google."""
    if request.node.get_closest_marker("allow_google") is not None:
        monkeypatch.delenv("VXTRAIN_NO_GOOGLE", raising=False)
        monkeypatch.delenv("grpc_proxy", raising=False)
        yield
        return
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_getaddrinfo, real_create = socket.getaddrinfo, socket.create_connection

    def connect(self: socket.socket, address: Any) -> None:
        _check_address(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        _check_address(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        _check_lookup(host)
        return real_getaddrinfo(host, *args, **kwargs)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        _check_address(address)
        return real_create(address, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    for name in ("gethostbyname", "gethostbyname_ex", "gethostbyaddr"):  # the older lookups
        monkeypatch.setattr(socket, name, _guarded_lookup(getattr(socket, name)))
    yield


def _check_lookup(host: Any) -> None:
    if not _host_is_local(host):
        raise NetworkGuardError(f"test tried to resolve {host!r}: only loopback is allowed")


def _guarded_lookup(real: Any) -> Any:
    def lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        _check_lookup(host)
        return real(host, *args, **kwargs)
    return lookup


@pytest.fixture
def emulator() -> Iterator[Any]:
    """A JobService (and Logging) emulator on a free loopback port, stopped after the test."""
    import io

    from vxtrain.backends.emulator import start_emulator  # grpc + aiplatform: only for tests that use it

    handle = start_emulator(out=io.StringIO())
    try:
        yield handle
    finally:
        handle.stop(grace=None)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """A headless Chromium (tests/browser.py's Browser) shared by the session's page tests;
    they skip saying what is missing, or fail under CI, without chromium, chromedriver or selenium."""
    from tests import browser as chromium

    chromium.require_browser()
    yield from chromium.start()


# --- nothing left running ----------------------------------------------------------
# A thread or process that outlives its test runs on during the next ones (issue 26:
# a storage client's retrying thread drew from the global `random` inside hypothesis
# tests). Function-scoped and autouse, so it is set up after any session or module
# fixture (pytest sets broader scopes up first): an emulator or registry such a fixture
# keeps for many tests is in `before`, never a leftover.

@pytest.fixture(autouse=True)
def _no_leaks() -> Iterator[None]:
    """Fail a test that leaves a thread or a child process running (tests/leaks.py);
    the processes it left are killed, with their process groups."""
    from tests import leaks

    before = leaks.snapshot()
    yield
    threads, children = leaks.leftovers(before)
    if threads or children:
        message = leaks.describe(threads, children)  # before the kill: it reads their command lines
        leaks.kill(children)
        pytest.fail(f"the test left running after it ended (+{leaks.GRACE:g} s):\n  {message}\n"
                    "stop what a test starts in a `finally:` block or in a fixture's teardown", pytrace=False)
