"""`vxtrain emulator` as a user starts it: a separate process, then the real client."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import vxtrain
from tests.processes import stop
from vxtrain.cli import main

ROOT = Path(__file__).resolve().parents[3]
STUDY = """\
display_name: seeded
chief: {machine_type: n1-standard-4, image: i, command: [python, train.py]}
study:
  metric: {id: accuracy, goal: maximize}
  parameters:
    lr: {type: double, min: 0.0001, max: 0.1, scale: log}
    layers: {type: integer, min: 1, max: 8}
  max_trials: 3
  parallel_trials: 1
  algorithm: random
"""


@contextmanager
def emulator(*flags: str) -> Iterator[str]:
    """Start `vxtrain emulator --port 0 FLAGS`; yield its address once it listens.

    Stopped with Ctrl-C's SIGINT when the block ends, passed or failed (killed, with its
    process group, if it has not exited 30 s later); a clean exit is checked only after
    a block that passed, so a failure is not hidden behind the exit status it caused."""
    proc = subprocess.Popen([sys.executable, "-m", "vxtrain", "emulator", "--port", "0", *flags],
                            cwd=ROOT, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "listening on" in line, line
        yield line.rsplit(" ", 1)[1].strip()
    finally:
        _, rest = stop(proc, signal.SIGINT, timeout=30)  # drains and closes stderr
    assert proc.returncode == 0, rest


def _trial_parameters(address: str, spec: Path) -> list[Any]:
    options = vxtrain.Options(project="p", region="us-central1")
    view = vxtrain.submit(spec, options, endpoint=address, wait=True)
    assert view["state"] == "JOB_STATE_SUCCEEDED"
    return [t["parameters"] for t in view["trials"]]


@pytest.mark.slow
def test_seed_makes_the_emulators_random_trials_reproducible(tmp_path: Path) -> None:
    spec = tmp_path / "study.yaml"
    spec.write_text(STUDY)
    runs = []
    for _ in range(2):
        with emulator("--seed", "7", "--simulate", "0.1") as address:
            runs.append(_trial_parameters(address, spec))
    assert runs[0] == runs[1]
    assert len(runs[0]) == 3 and len({repr(p) for p in runs[0]}) > 1


@pytest.mark.slow
def test_stockout_and_pending_flags_as_a_user_starts_them() -> None:
    """`--stockout us-east1 --stockout-after 0.2 --pending europe-west4`: the real client sees
    a job in us-east1 end FAILED with code 8, and one in europe-west4 stay PENDING."""
    job = {"displayName": "short", "jobSpec": {"workerPoolSpecs": [{
        "machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1",
        "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/t:1", "command": ["true"]}}]}}
    from tests.submission.helpers import session, submit_job  # here: only this test talks to a job API

    with emulator("--simulate", "0.2", "--stockout", "us-east1", "--stockout-after", "0.2",
                  "--pending", "europe-west4") as address:
        failed = submit_job(address, job, region="us-east1", wait=True, check=False, retry=None)
        pending = submit_job(address, job, region="europe-west4", retry=None)
        with session(address, retry=None) as s:
            later = s.wait(pending["name"], timeout=0.6, until=lambda view, elapsed: elapsed >= 0.5)
            s.cancel(pending["name"])
    assert failed["state"] == "JOB_STATE_FAILED"
    assert failed["error"] == {"code": 8, "message": "Resources are insufficient in region: us-east1. "
                                                     "Please try a different region."}
    assert later.state == "JOB_STATE_PENDING"


@pytest.mark.parametrize("argv", [["--port", "70000"], ["--port", "-1"], ["--simulate", "-5"],
                                  ["--stockout-after", "-1"], ["--simulate", "1e300"]])
def test_out_of_range_numbers_are_usage_errors_before_anything_listens(argv: list[str]) -> None:
    assert main(["emulator", *argv]) == 2


def test_list_with_a_filter_reaches_the_emulator(capsys: pytest.CaptureFixture[str]) -> None:
    """`vxtrain list --filter` sends the filter in parentheses (build_filter), which Vertex AI
    takes as AIP-160 grouping; the emulator refused it, so the command always exited 4."""
    from tests.incli import run
    from vxtrain.backends import open_backend
    from vxtrain.backends.emulator import start_emulator
    from vxtrain.vocab.kinds import CUSTOM

    pool = {"replicaCount": "1", "machineSpec": {"machineType": "n1-standard-4"},
            "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/t:1"}}
    with start_emulator(simulate_seconds=30, environ={}) as handle:
        with open_backend(endpoint=handle.address) as backend:
            for name in ("x", "y"):
                backend.create(CUSTOM, "projects/p/locations/us-central1",
                               {"displayName": name, "labels": {"team": "nlp"}, "jobSpec": {"workerPoolSpecs": [pool]}})
        listing = ("list", "--endpoint", handle.address, "--project", "p", "--region", "us-central1", "-o", "json")
        code, listed, err = run(capsys, *listing, "--filter", 'display_name="x"')
        assert code == 0, err
        assert [job["display_name"] for job in listed["jobs"]] == ["x"]
        code, listed, err = run(capsys, *listing, "--filter", 'display_name="x" OR display_name="y"', "--label",
                                "team=nlp")
        assert code == 0, err
        assert sorted(job["display_name"] for job in listed["jobs"]) == ["x", "y"]
