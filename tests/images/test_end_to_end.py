"""From a folder with requirements to a running emulated job and an image in a real registry.

The image is checked byte by byte through the registry API (manifest, config,
layers, files, digests); a second submit pushes nothing; a code change pushes
only a new code layer, config and manifest; plan never pushes.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.images.conftest import (DOCKER_MANIFEST, OCI_MANIFEST, BaseImage, digest, get_blob, get_manifest,
                                   layer_entries, layer_file, push_base)
from tests.incli import run
from vxtrain import api
from vxtrain.backends.emulator import start_emulator
from vxtrain.images.publish import publish

pytestmark = pytest.mark.slow

SPEC = """\
display_name: image-from-folder
image_repository: {registry}/{repository}
chief:
  machine_type: n1-standard-4
  build:
    base: {base}
    source: src
    requirements: requirements.txt
    python: '3.10'
  command: [python, -m, trainer.task]
  args: [--epochs=1]
"""
TASK = b"""import os, sys
print("TRAINED", os.getcwd(), sys.argv[1:], flush=True)
"""


def write_project(folder: Path, base: str, registry: str, repository: str = "train") -> Path:
    """A spec and its folders: code (with files the exclusions drop) and requirements."""
    (folder / "src" / "trainer").mkdir(parents=True)
    (folder / "src" / "trainer" / "__init__.py").write_bytes(b"")
    (folder / "src" / "trainer" / "task.py").write_bytes(TASK)
    (folder / "src" / "trainer" / "__pycache__").mkdir()
    (folder / "src" / "trainer" / "__pycache__" / "task.cpython-310.pyc").write_bytes(b"excluded")
    (folder / "src" / ".git").mkdir()
    (folder / "src" / ".git" / "HEAD").write_bytes(b"excluded")
    (folder / "requirements.txt").write_text("tinydep==1.0\n")
    spec = folder / "job.yaml"
    spec.write_text(SPEC.format(registry=registry, base=base, repository=repository))
    return spec


def _submit(spec: Path, out: io.StringIO) -> dict[str, Any]:
    with start_emulator(workdir=spec.parent, out=out, environ={}) as handle:
        return api.submit(spec, endpoint=handle.address, wait=True, idempotency_key=uuid.uuid4().hex)


@pytest.mark.parametrize("oci", [False, True], ids=["docker", "oci"])
def test_folder_to_registry_to_emulated_job(tmp_path: Path, registry: str, wheels: Path, oci: bool) -> None:
    base = push_base(registry, f"base/{'oci' if oci else 'docker'}", "py310", oci=oci, index=True)
    spec = write_project(tmp_path, base.ref, registry)
    planned = api.plan(spec)
    [image] = planned.images
    repo = "train/src"
    assert image.uri == f"{registry}/{repo}:{image.tag}"
    assert planned.custom_job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["imageUri"] == image.uri
    assert get_manifest(registry, repo, image.tag)[2].status_code == 404  # plan pushes nothing

    out = io.StringIO()
    view = _submit(spec, out)
    assert view["state"] == "JOB_STATE_SUCCEEDED", out.getvalue()
    [entry] = view["images"]
    assert entry["pool"] == "chief" and entry["uri"] == image.uri and entry["pushed"] is True
    trained = [line for line in out.getvalue().splitlines() if "TRAINED" in line]
    assert trained and str(tmp_path / "src") in trained[0] and "--epochs=1" in trained[0]  # ran in place

    manifest, body, response = get_manifest(registry, repo, image.tag)
    assert digest(body) == entry["digest"] == response.headers["Docker-Content-Digest"]
    _check_image(registry, repo, manifest, base, oci, tmp_path)

    again = io.StringIO()
    second = _submit(spec, again)
    assert second["images"] == [{**entry, "pushed": False}], again.getvalue()


def _check_image(registry: str, repo: str, manifest: dict[str, Any], base: BaseImage, oci: bool,
                 folder: Path) -> None:
    assert manifest["mediaType"] == (OCI_MANIFEST if oci else DOCKER_MANIFEST)  # the base's family
    layers = manifest["layers"]
    assert layers[0] == base.manifest["layers"][0] and len(layers) == 3
    want_type = "application/vnd.oci.image.layer.v1.tar+gzip" if oci else "application/vnd.docker.image.rootfs.diff.tar.gzip"
    assert {layer["mediaType"] for layer in layers[1:]} == {want_type}
    blobs = [get_blob(registry, repo, layer["digest"]) for layer in layers]
    assert [digest(b) for b in blobs] == [layer["digest"] for layer in layers]
    assert [len(b) for b in blobs] == [layer["size"] for layer in layers]
    config_bytes = get_blob(registry, repo, manifest["config"]["digest"])
    assert manifest["config"]["mediaType"] == base.manifest["config"]["mediaType"]
    config = json.loads(config_bytes)
    assert config["rootfs"]["diff_ids"] == [digest(gzip.decompress(b)) for b in blobs]
    assert config["architecture"] == "amd64" and config["os"] == "linux"
    inner = config["config"]
    assert inner["WorkingDir"] == "/opt/vxtrain/code"
    assert inner["Entrypoint"] == ["/bin/sh", "-c"] and inner["Cmd"] == ["echo base"]  # untouched
    assert "PYTHONPATH=/opt/vxtrain/site:/opt/vxtrain/code:/opt/vxtrain/deps:/opt/base" in inner["Env"]
    assert "PATH=/opt/vxtrain/bin:/usr/local/bin:/usr/bin" in inner["Env"]  # console scripts first
    assert len(config["history"]) == 3 and all(h.get("created") for h in config["history"])

    deps = layer_entries(blobs[1])
    assert layer_file(blobs[1], "opt/vxtrain/deps/tinydep/__init__.py").startswith(b"VALUE = 'tinydep 1.0'\n")
    assert not any(name.startswith("opt/vxtrain/deps/bin") for name in deps)  # host-bound console scripts
    record = layer_file(blobs[1], "opt/vxtrain/deps/tinydep-1.0.dist-info/RECORD").decode()
    assert "tinydep/__init__.py," in record and "bin/" not in record  # nor their host-bound hashes
    assert "opt/vxtrain/deps/tinydep-1.0.dist-info/METADATA" in deps
    assert not any(name.endswith(".pyc") for name in deps)  # pip ran with --no-compile
    code = layer_entries(blobs[2])
    files = sorted(n for n, m in code.items() if m.isfile())
    assert files == ["opt/vxtrain/code/trainer/__init__.py", "opt/vxtrain/code/trainer/task.py"]
    assert layer_file(blobs[2], "opt/vxtrain/code/trainer/task.py") == (folder / "src/trainer/task.py").read_bytes()
    assert [n for n in code if not code[n].isfile()] == ["opt", "opt/vxtrain", "opt/vxtrain/code",
                                                         "opt/vxtrain/code/trainer"]
    for member in [*deps.values(), *code.values()]:
        assert (member.mtime, member.uid, member.gid, member.uname, member.gname) == (0, 0, 0, "", "")
        assert member.mode in (0o644, 0o755)
    assert list(code) == sorted(code)  # sorted entries
    assert blobs[2][4:8] == b"\0\0\0\0"  # gzip header: no timestamp


def test_a_code_change_pushes_only_the_code_layer_config_and_manifest(tmp_path: Path, registry: str,
                                                                      wheels: Path) -> None:
    base = push_base(registry, "base/change", "py310")
    spec = write_project(tmp_path, base.ref, registry, "change")
    [first] = publish(api.plan(spec).images)
    assert first.pushed and len(first.blobs) == 3  # deps layer, code layer, config (the base was mounted)
    assert publish(api.plan(spec).images)[0].pushed is False

    (tmp_path / "src" / "trainer" / "task.py").write_bytes(TASK + b"# changed\n")
    [image] = api.plan(spec).images
    [changed] = publish([image])
    manifest, _, _ = get_manifest(registry, "change/src", image.tag)
    code_layer, config = manifest["layers"][-1]["digest"], manifest["config"]["digest"]
    assert changed.pushed and changed.blobs == [code_layer, config]
    assert manifest["layers"][:2] == get_manifest(registry, "change/src", first.uri.rsplit(":", 1)[1])[0]["layers"][:2]


def test_same_inputs_give_the_same_digests(tmp_path: Path, registry: str, wheels: Path) -> None:
    """Reproducible layers: rebuilding in another folder, with other file times, gives one manifest."""
    base = push_base(registry, "base/repro", "py310")
    one = publish(api.plan(write_project(tmp_path / "a", base.ref, registry, "repro-a")).images)[0]
    other = tmp_path / "b"
    spec = write_project(other, base.ref, registry, "repro-b")
    for path in (other / "src").rglob("*"):
        os.utime(path, (1_000_000, 1_000_000))
    two = publish(api.plan(spec).images)[0]
    assert two.pushed and one.digest == two.digest and one.uri.rsplit(":", 1)[1] == two.uri.rsplit(":", 1)[1]


def test_local_runs_run_the_source_in_place_and_build_nothing(tmp_path: Path, registry: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_project(tmp_path, f"{registry}/base/never-pushed:py310", registry, "local")
    view = api.submit(spec, target="local")
    assert view["state"] == "JOB_STATE_SUCCEEDED" and "images" not in view
    capsys.readouterr()
    code, out, _ = run(capsys, "local-run", str(spec))
    assert code == 0 and f"TRAINED {tmp_path / 'src'} ['--epochs=1']" in out  # the image's WorkingDir, here
    assert get_manifest(registry, "local/src", api.plan(spec).images[0].tag)[2].status_code == 404


def test_the_cli_reports_images_in_json_and_steps_as_plain_lines(tmp_path: Path, registry: str, wheels: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    base = push_base(registry, "base/cli", "py310")
    spec = write_project(tmp_path, base.ref, registry, "cli-ok")
    with start_emulator(workdir=spec.parent, out=io.StringIO(), environ={}) as handle:
        code, doc, err = run(capsys, "submit", str(spec), "--endpoint", handle.address, "--output", "json")
        again = run(capsys, "submit", str(spec), "--endpoint", handle.address, "--output", "json")
    [entry] = doc["images"]
    assert code == 0 and entry["pool"] == "chief" and entry["pushed"] is True
    assert entry["digest"].startswith("sha256:") and entry["uri"].startswith(f"{registry}/cli-ok/src:")
    steps = [line for line in err.splitlines() if line.startswith("vxtrain: ")]
    assert any("installing requirements.txt" in s for s in steps) and any("pushed " in s for s in steps)
    assert "\r" not in err and "\x1b[" not in err  # piped: plain lines, no bar
    assert again[0] == 0 and again[1]["images"] == [{**entry, "pushed": False}]
    assert "is already pushed" in again[2]
