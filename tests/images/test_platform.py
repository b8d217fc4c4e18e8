"""A4X pools run on Arm: their image is built for linux/arm64 from a multi-arch base, with
wheels for manylinux aarch64 and markers judged for aarch64; a base without linux/arm64
is refused before anything is pushed; plan says the platform (JSON and text)."""
from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

from tests.images.conftest import get_blob, get_manifest
from tests.registry import push_base
from tests.images.test_dependencies import make_wheel
from tests.incli import run
from vxtrain import api
from vxtrain.catalog.images import image_platform
from vxtrain.backends.emulator import start_emulator
from vxtrain.images.publish import BasePlatformError, publish

pytestmark = pytest.mark.slow

SPEC = """\
display_name: arm
image_repository: {registry}/{repository}
region: us-central1
chief:
  machine_type: a4x-highgpu-4g
  accelerator: {{type: NVIDIA_GB200, count: 4}}
  reservation: {{affinity: specific, name: projects/p/zones/us-central1-a/reservations/r}}
  build:
    base: {base}
    source: src
    requirements: requirements.txt
    python: '3.10'
  command: [python, -m, trainer.task]
"""
#: An aarch64-only extension wheel; a dependency only aarch64 gets; one only x86_64 would get
#: (in no folder: pip fails if it judges the marker for this x86_64 machine).
REQUIREMENTS = "armonly==1.0\n"


def _project(folder: Path, base: str, registry: str, repository: str) -> Path:
    (folder / "src" / "trainer").mkdir(parents=True)
    (folder / "src" / "trainer" / "task.py").write_bytes(b"print('arm')\n")
    (folder / "requirements.txt").write_text(REQUIREMENTS)
    spec = folder / "job.yaml"
    spec.write_text(SPEC.format(registry=registry, repository=repository, base=base))
    return spec


@pytest.fixture
def arm_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "index"
    make_wheel(folder, "armonly", "1.0", {"armonly/__init__.py": b"from armonly._native import x\n",
                                          "armonly/_native.cpython-310-aarch64-linux-gnu.so": b"\x7fELF aarch64"},
               requires=('armdep; platform_machine == "aarch64"', 'x86dep; platform_machine == "x86_64"'),
               tag="cp310-cp310-manylinux2014_aarch64")
    make_wheel(folder, "armdep", "1.0", {"armdep.py": b"ARM = True\n"})
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return folder


def test_the_catalog_says_a4x_is_arm() -> None:
    assert image_platform("a4x-highgpu-4g") == "linux/arm64"
    assert image_platform("a4-highgpu-8g") == image_platform("n1-standard-4") == "linux/amd64"


def test_an_a4x_image_is_built_for_arm64(tmp_path: Path, registry: str, arm_index: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    base = push_base(registry, "base/multi", "py310", oci=True, index=True)  # amd64 and arm64
    arm = get_manifest(registry, "base/multi", "py310-arm64")[0]
    spec = _project(tmp_path, base.ref, registry, "arm")
    code, doc, _ = run(capsys, "plan", str(spec), "--output", "json")
    assert code == 0 and doc["images"][0]["platform"] == "linux/arm64"
    code, text, _ = run(capsys, "plan", str(spec))
    assert "platform linux/arm64, Python 3.10" in text and "wheels for linux/arm64" in text
    warnings = [d.code for d in api.check_file(spec).diagnostics if d.severity == "warning"]
    assert "build-platform" in warnings  # the base's index is not known offline
    [image] = api.plan(spec).images
    [pushed] = publish([image])
    manifest = get_manifest(registry, "arm/src", image.tag)[0]
    assert manifest["layers"][0] == arm["layers"][0]  # the arm64 image's layer, not the amd64 one
    config = json.loads(get_blob(registry, "arm/src", manifest["config"]["digest"]))
    assert config["architecture"] == "arm64" and pushed.pushed
    deps = gzip.decompress(get_blob(registry, "arm/src", manifest["layers"][1]["digest"]))
    with tarfile.open(fileobj=io.BytesIO(deps)) as tar:
        names = set(tar.getnames())
    assert "opt/vxtrain/deps/armonly/_native.cpython-310-aarch64-linux-gnu.so" in names
    assert "opt/vxtrain/deps/armdep.py" in names  # platform_machine judged as aarch64


def test_a_base_without_arm64_is_refused_before_any_push(tmp_path: Path, registry: str, arm_index: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A spec mistake found at push time: exit 1 at the spec's build.base line (issue 35), not an API error."""
    base = push_base(registry, "base/amd64only", "py310")
    spec = _project(tmp_path, base.ref, registry, "noarm")
    [image] = api.plan(spec).images
    with pytest.raises(BasePlatformError) as err:
        publish([image])
    assert err.value.exit_code == 1 and "linux/arm64" in str(err.value) and "nothing was pushed" in str(err.value)
    assert get_manifest(registry, "noarm/src", image.tag)[2].status_code == 404
    with start_emulator(workdir=spec.parent, out=io.StringIO(), environ={}) as handle:
        code, doc, _ = run(capsys, "submit", str(spec), "--endpoint", handle.address, "-o", "json")
        assert handle.jobs() == []
    [d] = doc["error"]["diagnostics"]
    assert code == 1 and d["code"] == "build-base-platform" and d["path"].endswith("build.base") and d["line"], doc
