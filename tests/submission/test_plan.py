"""The plan of a key's life, kept in the bucket (vxtrain.submission.plan, .stored): ``vxtrain
submit`` in process against the emulator and fake-gcs-server (which enforces generation
preconditions, so create-if-absent can fail)."""
from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.incli import run
from tests.packaging.conftest import bucket, gcs, gcs_server_url  # noqa: F401 - fixtures (fake-gcs-server)
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.submission.plan import Plan, PlannedRung, RecoveryPolicy, differences, spec_hash
from vxtrain.submission.stored import plan_path
from vxtrain.vocab.kinds import CUSTOM

PROJECT, REGION = "p", "us-central1"


@pytest.fixture
def emulator() -> Iterator[EmulatorHandle]:
    handle = start_emulator(simulate_seconds=0.3, environ={}, out=io.StringIO())
    try:
        yield handle
    finally:
        handle.stop(grace=None)


def spec(tmp_path: Path, **extra: Any) -> Path:
    text = {"display_name": "planned", "project": PROJECT, "region": REGION, "base_output_dir": "gs://b/run",
            "chief": {"machine_type": "n1-standard-4", "image": "us-docker.pkg.dev/p/r/train:1",
                      "command": ["true"]}, **extra}
    path = tmp_path / "job.yaml"
    path.write_text(json.dumps(text))
    return path


def stored(gcs: Any, bucket: str, key: str) -> dict[str, Any]:
    blob = gcs.bucket(bucket).get_blob(plan_path(PROJECT, REGION, key))
    assert blob is not None, key
    loaded: dict[str, Any] = json.loads(blob.download_as_bytes())
    return loaded


def test_submit_keeps_the_plan_with_the_contracts_shape(emulator: EmulatorHandle, tmp_path: Path, gcs: Any,
                                                        bucket: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, recovery={"max_recoveries": 2})
    code, doc, err = run(capsys, "submit", str(path), "--endpoint", emulator.address, "-o", "json",
                         "--idempotency-key", "kept-1", "--staging-bucket", f"gs://{bucket}/pkgs", "--wait")
    assert code == 0, err
    plan = stored(gcs, bucket, "kept-1")
    assert list(plan) == ["version", "key", "project", "region", "spec_sha256", "created", "rungs", "recovery",
                          "notify", "finished"]
    assert (plan["version"], plan["key"], plan["project"], plan["region"]) == (1, "kept-1", PROJECT, REGION)
    assert [list(r) for r in plan["rungs"]] == [["rung", "project", "region", "job"]]
    assert plan["rungs"][0]["job"]["jobSpec"]["baseOutputDirectory"] == {"outputUriPrefix": "gs://b/run"}
    assert plan["recovery"]["max_recoveries"] == 2 and plan["notify"] == []
    assert plan["finished"]["outcome"] == "succeeded" and plan["finished"]["job"] == doc["name"]
    assert Plan.from_json(plan).spec_sha256 == plan["spec_sha256"]


def test_another_spec_under_a_kept_key_is_exit_1_naming_both_hashes(
        emulator: EmulatorHandle, tmp_path: Path, gcs: Any, bucket: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34: a re-run that dropped the user's `--set base_output_dir=…` would make an attempt
    that cannot resume: refused, nothing created."""
    path = spec(tmp_path, recovery={"max_recoveries": 1})
    flags = ("--endpoint", emulator.address, "--idempotency-key", "kept-2", "--staging-bucket", f"gs://{bucket}")
    code, _, err = run(capsys, "submit", str(path), *flags, "--set", "base_output_dir=gs://b/other")
    assert code == 0, err
    first = stored(gcs, bucket, "kept-2")["spec_sha256"]
    code, _, err = run(capsys, "submit", str(path), *flags)
    assert code == 1 and first in err and "spec_sha256" in err, err
    assert len(emulator.jobs()) == 1


def test_a_submit_without_wait_names_the_followers_that_carry_its_recovery(
        emulator: EmulatorHandle, tmp_path: Path, gcs: Any, bucket: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, recovery={"max_recoveries": 1})
    code, _, err = run(capsys, "submit", str(path), "--endpoint", emulator.address, "--idempotency-key", "nb",
                       "--set", "chief.replicas=1")
    assert code == 0, err
    assert "only such a follower can carry it" in err and "vxtrain reconcile" in err
    assert "job.yaml --set chief.replicas=1 --endpoint" in err  # the resume line repeats the options
    assert "--idempotency-key nb --wait` later follows it" in err
    code, _, err = run(capsys, "submit", str(path), "--endpoint", emulator.address, "--idempotency-key", "wb",
                       "--staging-bucket", f"gs://{bucket}")
    assert code == 0, err
    assert f"vxtrain reconcile --bucket gs://{bucket}" in err


def test_nothing_is_created_after_the_plan_finished(emulator: EmulatorHandle, tmp_path: Path, gcs: Any,
                                                    bucket: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The life ended (its plan says so); its job is then deleted: a re-run creates nothing."""
    path = spec(tmp_path)
    flags = ("--endpoint", emulator.address, "--idempotency-key", "done-1", "--staging-bucket", f"gs://{bucket}",
             "-o", "json")
    code, doc, err = run(capsys, "submit", str(path), *flags, "--wait")
    assert code == 0, err
    emulator.emulator.delete(CUSTOM, doc["name"])
    assert emulator.jobs() == []
    code, _, err = run(capsys, "submit", str(path), *flags, "--wait")
    assert emulator.jobs() == [], err


def test_the_hash_is_the_job_as_sent() -> None:
    job = {"displayName": "d", "jobSpec": {"workerPoolSpecs": [{"replicaCount": "1"}]}}
    rung = PlannedRung(0, PROJECT, REGION, job)
    assert spec_hash((rung,), None) == spec_hash((PlannedRung(0, PROJECT, REGION, json.loads(json.dumps(job))),), None)
    assert spec_hash((rung,), None) != spec_hash((rung,), RecoveryPolicy(1))
    assert spec_hash((rung,), None) != spec_hash((PlannedRung(0, PROJECT, "us-east1", job),), None)


@pytest.mark.parametrize(("sent", "found", "differ"), [
    ({"a": {"b": "1"}}, {"a": {"b": 1, "c": "added by the service"}}, []),
    ({"a": False, "n": 0, "l": []}, {}, []),  # proto3 leaves zero values out
    ({"a": {"b": "x"}}, {"a": {"b": "y"}}, ["a.b"]),
    ({"env": [{"name": "A", "value": "1"}]}, {"env": [{"name": "A", "value": "1"},
                                                      {"name": "VXTRAIN_ATTEMPT", "value": "2"}]}, []),
    ({"scheduling": {"strategy": "SPOT"}}, {"scheduling": {"strategy": "STANDARD"}}, []),
    ({"l": ["a", "b"]}, {"l": ["a"]}, ["l"]),
])
def test_what_differs_between_the_job_sent_and_one_found(sent: Any, found: Any, differ: list[str]) -> None:
    assert differences(sent, found) == differ
