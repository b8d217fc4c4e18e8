"""Local runs install package_uris archives (as the prebuilt images do) instead of refusing them."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

from vxtrain.model import build
from vxtrain.packaging.build import build_sdist
from vxtrain.sources.folder import describe
from vxtrain.runtime import runner

pytestmark = pytest.mark.slow


def test_a_local_sdist_in_package_uris_is_installed_and_run(bare_source: Path, tmp_path: Path) -> None:
    sdist = build_sdist(describe(bare_source), tmp_path / "dist")
    job = build({"display_name": "t", "chief": {"machine_type": "n1-standard-4", "args": ["--x=1"],
                 "python_package": {"executor_image": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest",
                                    "package_uris": [str(sdist)], "module": "trainer.task"}}})
    out = io.StringIO()
    result = runner.run_job(job, {}, out=out, base_dir=tmp_path)
    assert result.succeeded, out.getvalue()
    line = next(x for x in out.getvalue().splitlines() if "TRAINED" in x)
    assert "TRAINED 42" in line and "site-packages" in line and "--x=1" in line


def test_no_credentials_to_download_a_package_says_download_not_upload(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vxtrain.errors import PermissionError_
    from vxtrain.packaging.install import download

    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-such-key.json"))
    with pytest.raises(PermissionError_) as caught:
        download("gs://b/pkgs/trainer-1.tar.gz", tmp_path)
    message = str(caught.value)
    assert "to download gs://b/pkgs/trainer-1.tar.gz" in message and "upload" not in message
    assert "STORAGE_EMULATOR_HOST" in message
