"""From a folder to a job: plan → submit to the JobService emulator with fake-gcs-server.

The package lands at the URI ``plan`` showed, the job runs the *installed*
package (not the folder), a re-submit uploads nothing (same generation), and a
changed file gives a new URI.
"""
from __future__ import annotations

import io
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.sources.folders import write_bare
from vxtrain import api
from vxtrain.backends.emulator import start_emulator
from vxtrain.errors import SpecError, VxtrainError
from vxtrain.packaging.upload import split_gs_uri

pytestmark = pytest.mark.slow

SPEC = """\
display_name: from-laptop
staging_bucket: gs://{bucket}/staging
chief:
  machine_type: n1-standard-4
  python_package:
    executor_image: us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest
    module: trainer.task
    source: code
  args: [--epochs=1]
"""


@pytest.fixture
def spec(tmp_path: Path, bucket: str) -> Path:
    write_bare(tmp_path / "code")
    path = tmp_path / "job.yaml"
    path.write_text(SPEC.format(bucket=bucket))
    return path


def _submit(spec: Path, out: io.StringIO) -> dict[str, Any]:
    with start_emulator(workdir=spec.parent, out=out, environ={}) as handle:
        return api.submit(spec, endpoint=handle.address, wait=True, idempotency_key=uuid.uuid4().hex)


def test_plan_submit_resubmit_change(spec: Path, gcs: Any, bucket: str) -> None:
    planned = api.plan(spec)
    uri = planned.packages[0].uri
    pool = planned.custom_job["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]
    assert pool["packageUris"] == [uri] and uri.startswith(f"gs://{bucket}/staging/vxtrain-packages/code-")
    _, name = split_gs_uri(uri)
    assert gcs.bucket(bucket).get_blob(name) is None  # plan uploads nothing

    out = io.StringIO()
    view = _submit(spec, out)
    assert view["state"] == "JOB_STATE_SUCCEEDED", out.getvalue()
    stored = gcs.bucket(bucket).get_blob(name)
    assert stored is not None and stored.size > 0
    trained = [line for line in out.getvalue().splitlines() if "TRAINED" in line]
    assert trained and "TRAINED 42" in trained[0] and "--epochs=1" in trained[0]
    ran_from = trained[0].split()[3]
    assert "site-packages" in ran_from and str(spec.parent / "code") not in ran_from  # installed, not the folder

    again = io.StringIO()
    assert _submit(spec, again)["state"] == "JOB_STATE_SUCCEEDED", again.getvalue()
    assert gcs.bucket(bucket).get_blob(name).generation == stored.generation  # uploaded once

    (spec.parent / "code" / "trainer" / "util.py").write_text("VALUE = 43\n")
    changed = api.plan(spec).packages[0].uri
    assert changed != uri and changed.startswith(f"gs://{bucket}/staging/vxtrain-packages/code-")
    out = io.StringIO()
    assert _submit(spec, out)["state"] == "JOB_STATE_SUCCEEDED", out.getvalue()
    assert "TRAINED 43" in out.getvalue()
    assert gcs.bucket(bucket).get_blob(split_gs_uri(changed)[1]) is not None


def test_submit_without_a_bucket_is_a_located_error_and_local_runs_need_none(spec: Path, gcs: Any) -> None:
    spec.write_text("\n".join(line for line in spec.read_text().splitlines() if "staging_bucket" not in line))
    with pytest.raises(SpecError) as err:
        with start_emulator(workdir=spec.parent, out=io.StringIO(), environ={}) as handle:
            api.submit(spec, endpoint=handle.address)
    diag = err.value.diagnostics[0]
    assert diag.code == "no-staging-bucket" and diag.line == 7 and "--staging-bucket" in diag.message
    view = api.submit(spec, target="local")  # the folder itself, on PYTHONPATH: no bucket needed
    assert view["state"] == "JOB_STATE_SUCCEEDED"


def test_staging_bucket_flag_wins_over_the_spec(spec: Path) -> None:
    planned = api.plan(spec, api.Options(staging_bucket="gs://other/p"))
    assert planned.packages[0].uri.startswith("gs://other/p/vxtrain-packages/")


def test_a_folder_edited_after_its_uri_was_computed_uploads_nothing(spec: Path, gcs: Any, bucket: str) -> None:
    """The URI names the files as hashed at compile; the sdist is built later: when they
    differ by then, an upload would put other code under the URI, reused by later submits."""
    from vxtrain.packaging import sdists

    packages = api.plan(spec).packages
    (spec.parent / "code" / "trainer" / "util.py").write_text("VALUE = 'edited since plan'\n")
    with pytest.raises(VxtrainError, match="changed while it was being built"):
        sdists.publish(packages, "vxtrain-test")
    assert gcs.bucket(bucket).get_blob(split_gs_uri(packages[0].uri)[1]) is None
