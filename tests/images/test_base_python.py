"""The image's Python confirmed from the base itself when its config has no PYTHON_VERSION
(issue 34, item 3: ``build.python: "3.12"`` over Debian's 3.11 pushed an image whose numpy
could not import, exit 0). The layers are read as tar listings from the real registry, top
layer first; a base that shows another Python, or none, is refused at the spec's line with
exit 1 before anything is pushed or created."""
from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest
import requests

from tests.images.bases import push_python_base
from tests.images.conftest import get_blob, push_base
from tests.incli import run
from tests.registry import DOCKER_MANIFEST, BaseImage, digest, push_blob, put_manifest
from vxtrain import api
from vxtrain.backends.emulator import start_emulator
from vxtrain.images.publish import publish
from vxtrain.images.pythons import Shown, decide, scan_layer
from vxtrain.images.registry import Repository

DEFAULT_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]

SPEC = """\
display_name: base-python
image_repository: {registry}/{repository}
chief:
  machine_type: n1-standard-4
  build:
    base: {base}
    source: src
    requirements: requirements.txt
    python: '{python}'
  command: [python, -m, trainer.task]
"""


def _layer(entries: dict[str, bytes | str], *, gz: bool = True) -> bytes:
    """A layer blob: a file per bytes value, a symlink per str value (its target)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, value in entries.items():
            info = tarfile.TarInfo(name)
            if isinstance(value, str):
                info.type, info.linkname = tarfile.SYMTYPE, value
                tar.addfile(info)
            else:
                info.size = len(value)
                tar.addfile(info, io.BytesIO(value))
    return gzip.compress(raw.getvalue(), mtime=0) if gz else raw.getvalue()


def _shown(blob: bytes, path: list[str] = DEFAULT_PATH) -> Shown | None:
    chunks = [blob[i:i + 7] for i in range(0, len(blob), 7)]  # odd pieces, as a registry's stream may cut them
    return decide(scan_layer(chunks, path), path)


# --- what one layer shows --------------------------------------------------------------

def test_debians_python_is_its_python3_link() -> None:
    shown = _shown(_layer({"usr/bin/python3": "python3.11", "usr/lib/python3.11/os.py": b"",
                           "usr/lib/python3/dist-packages/numpy/__init__.py": b""}))
    assert shown == Shown("3.11", "/usr/bin/python3 -> python3.11")


def test_the_first_python3_on_path_wins() -> None:
    # The official images' /usr/local Python over Debian's own: PATH has /usr/local/bin first.
    shown = _shown(_layer({"./usr/bin/python3": "python3.11", "./usr/local/bin/python3": "python3.12"}))
    assert shown == Shown("3.12", "/usr/local/bin/python3 -> python3.12")
    conda = ["/opt/conda/bin", *DEFAULT_PATH]
    shown = _shown(_layer({"opt/conda/bin/python3": "python3.10", "usr/bin/python3": "python3.8"}, gz=False), conda)
    assert shown == Shown("3.10", "/opt/conda/bin/python3 -> python3.10")


def test_a_python3_file_is_judged_by_the_standard_library_beside_it() -> None:
    shown = _shown(_layer({"usr/local/bin/python3": b"\x7fELF", "usr/local/lib/python3.9/os.py": b"",
                           "usr/lib/python3.11/os.py": b""}))
    assert shown == Shown("3.9", "/usr/local/bin/python3 and /usr/local/lib/python3.9")


def test_standard_libraries_alone_decide_when_there_is_one() -> None:
    assert _shown(_layer({"usr/lib/python3.11/os.py": b""})) == Shown("3.11", "/usr/lib/python3.11")
    two = _shown(_layer({"usr/lib/python3.11/os.py": b"", "usr/local/lib/python3.12/os.py": b""}))
    assert two == Shown(None, "/usr/lib/python3.11, /usr/local/lib/python3.12")


def test_a_layer_without_a_python_shows_none() -> None:
    # pip's packages in site-packages, the code: the layer below decides.
    assert _shown(_layer({"usr/local/lib/python3.11/site-packages/x.py": b"", "app/train.py": b""})) is None


# --- submit, with the tests' registry ----------------------------------------------------

def _project(folder: Path, base: str, registry: str, repository: str, python: str) -> Path:
    (folder / "src" / "trainer").mkdir(parents=True)
    (folder / "src" / "trainer" / "task.py").write_text("print('task')\n")
    (folder / "requirements.txt").write_text("tinydep==1.0\n")
    spec = folder / "job.yaml"
    spec.write_text(SPEC.format(registry=registry, repository=repository, base=base, python=python))
    return spec


def _no_python_version(registry: str, name: str, minor: str) -> BaseImage:
    """A base with a real Python ``minor`` laid out as the official images lay it out, and a
    config that does not say it (no PYTHON_VERSION)."""
    return push_python_base(registry, name, "latest", minor,
                            env=["PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"])


def _tags(registry: str, repository: str) -> list[str]:
    listing = requests.get(f"http://{registry}/v2/{repository}/src/tags/list", timeout=10)
    return [] if listing.status_code == 404 else list(listing.json().get("tags") or [])


@pytest.mark.slow
def test_another_python_in_the_bases_layers_is_refused_at_the_spec_line(
        tmp_path: Path, registry: str, wheels: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _no_python_version(registry, "bases/nover-3.11", "3.11")
    spec = _project(tmp_path, base.ref, registry, "mismatch312", "3.12")
    with start_emulator(workdir=spec.parent, out=io.StringIO(), environ={}) as handle:
        code, doc, err = run(capsys, "submit", str(spec), "--endpoint", handle.address, "--output", "json")
        jobs = handle.jobs()
    assert code == 1 and jobs == [] and _tags(registry, "mismatch312") == []
    [d] = doc["error"]["diagnostics"]
    assert (d["code"], d["line"], d["column"], d["path"]) == ("build-python-mismatch", 9, 5, "chief.build.python")
    assert "has Python 3.11 (its layers: /usr/local/bin/python3 -> python3.11" in d["message"]
    assert "set build.python to '3.11'" in d["message"]
    # The warning validate gives is said first, as validate says it; then the error at its line.
    lines = err.splitlines()
    warned = next(i for i, line in enumerate(lines) if "[build-python-unchecked]" in line)
    refused = next(i for i, line in enumerate(lines) if f"{spec}:9:5: error: " in line)
    assert lines[warned].startswith(f"{spec}:9:5: warning: ") and warned < refused


@pytest.mark.slow
def test_the_same_python_in_the_bases_layers_is_pushed_and_the_base_read_once(
        tmp_path: Path, registry: str, wheels: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _no_python_version(registry, "bases/nover-3.11", "3.11")
    spec = _project(tmp_path, base.ref, registry, "match311", "3.11")
    with start_emulator(workdir=spec.parent, out=io.StringIO(), environ={}) as handle:
        code, doc, err = run(capsys, "submit", str(spec), "--endpoint", handle.address, "--output", "json")
        assert code == 0, err
        assert doc["images"][0]["pushed"] is True and [d["code"] for d in doc["diagnostics"]] == [
            "base-by-tag", "build-python-unchecked"]
        assert err.count("for its Python (the base has no PYTHON_VERSION)") == 1
        (tmp_path / "src" / "trainer" / "task.py").write_text("print('task 2')\n")  # a new tag: checked again
        code, doc, err = run(capsys, "submit", str(spec), "--endpoint", handle.address, "--output", "json")
    assert code == 0 and doc["images"][0]["pushed"] is True, err
    assert "for its Python" not in err  # remembered by the base's layer digests: not read again


@pytest.mark.slow
def test_a_base_that_shows_no_python_is_refused(tmp_path: Path, registry: str, wheels: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    base = push_base(registry, "base/nopython", "latest")  # one layer, opt/base/hello.txt
    spec = _project(tmp_path, base.ref, registry, "nopython", "3.10")
    with start_emulator(workdir=spec.parent, out=io.StringIO(), environ={}) as handle:
        code, doc, err = run(capsys, "submit", str(spec), "--endpoint", handle.address, "--output", "json")
        jobs = handle.jobs()
    assert code == 1 and jobs == [] and _tags(registry, "nopython") == []
    [d] = doc["error"]["diagnostics"]
    assert d["code"] == "build-python-unconfirmed" and (d["line"], d["column"]) == (9, 5)
    assert "shows no Python in its layers" in d["message"] and "PYTHON_VERSION" in d["message"]


@pytest.mark.slow
def test_only_the_layers_down_to_the_one_with_python_are_read(
        tmp_path: Path, registry: str, wheels: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An OS layer below (here: bytes that are no tar at all, which reading would report) is
    never read when a layer above shows the Python."""
    bottom = b"not a layer: reading it would say so"
    top = _layer({"usr/bin/python3": "python3.11", "usr/lib/python3.11/os.py": b""})
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Env": ["PATH=/usr/bin:/bin"]},
                         "rootfs": {"type": "layers", "diff_ids": [digest(bottom), digest(gzip.decompress(top))]}}
                        ).encode()
    layers = [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": len(blob),
               "digest": push_blob(registry, "base/twolayers", blob)} for blob in (bottom, top)]
    push_blob(registry, "base/twolayers", config)
    put_manifest(registry, "base/twolayers", "latest", {
        "schemaVersion": 2, "mediaType": DOCKER_MANIFEST, "layers": layers,
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": len(config),
                   "digest": digest(config)}})
    spec = _project(tmp_path, f"{registry}/base/twolayers:latest", registry, "twolayers", "3.12")
    with start_emulator(workdir=spec.parent, out=io.StringIO(), environ={}) as handle:
        code, doc, err = run(capsys, "submit", str(spec), "--endpoint", handle.address, "--output", "json")
    assert code == 1 and doc["error"]["diagnostics"][0]["code"] == "build-python-mismatch", err
    assert err.count("for its Python") == 1 and layers[1]["digest"][:19] in err
    assert "cannot be listed" not in err


@pytest.mark.slow
def test_a_layer_read_for_the_python_and_copied_to_another_registry_is_pulled_once(
        tmp_path: Path, registry: str, wheels: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``localhost:PORT`` and ``127.0.0.1:PORT`` are two hosts to a client: the base's layer is
    copied, not mounted; the copy is of the bytes the Python check read (kept), not a second pull."""
    base = _no_python_version(registry, "bases/nover-3.11", "3.11")
    spec = _project(tmp_path, base.ref.replace("127.0.0.1", "localhost"), registry, "copyonce", "3.11")
    pulls: list[str] = []
    real = Repository.pull
    monkeypatch.setattr(Repository, "pull", lambda self, d: (pulls.append(d), real(self, d))[1])  # counted, real
    said: list[str] = []
    [pushed] = publish(api.plan(spec).images, say=said.append)
    assert pulls.count(base.layer_digest) == 1 and base.layer_digest in pushed.blobs, said  # (and its config)
    assert any("for its Python" in line for line in said) and any("copying base layer" in line for line in said)
    copied = get_blob(registry, "copyonce/src", base.layer_digest)
    assert digest(copied) == base.layer_digest
