"""The pipeline step's spec input as a gs:// URI, read from a real GCS emulator (fake-gcs-server)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vxtrain.kfp import step

SPEC = "display_name: from-gcs\nchief: {machine_type: n1-standard-4, image: i}\n"


def test_a_gs_spec_is_downloaded_for_the_step_and_removed_after(gcs: Any, bucket: str) -> None:
    gcs.bucket(bucket).blob("specs/job.yaml").upload_from_string(SPEC)
    with step.spec_file(f"gs://{bucket}/specs/job.yaml") as path:
        assert Path(path).name == "job.yaml" and Path(path).read_text() == SPEC
    assert not Path(path).exists()


@pytest.mark.parametrize(("where", "code", "says"), [
    ("specs/none.yaml", 4, "no spec at gs://{bucket}/specs/none.yaml"),
    ("specs/", 2, "names a folder, not a spec file")])
def test_a_missing_gs_spec_ends_the_step_with_vxtrains_exit_code(
        gcs: Any, bucket: str, where: str, code: int, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(step.StepFailed) as failed:
        step.run(f"gs://{bucket}/{where}", {}, "k", wait=False)
    assert failed.value.code == code
    assert says.format(bucket=bucket) in capsys.readouterr().err


def test_a_spec_given_as_text_is_a_file_of_the_working_directory_for_the_block(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside the step's working directory, the spec's relative paths resolve as beside a file."""
    monkeypatch.chdir(tmp_path)
    with step.spec_file(SPEC) as path:
        assert Path(path).parent == tmp_path and Path(path).read_text() == SPEC
    assert list(tmp_path.iterdir()) == []
