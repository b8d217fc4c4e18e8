"""What the ui's tests share: an emulator with a recovered job (package scope: made once),
and a ui served over it per test (stopped in the test's teardown, its connections with it).

The release (key ``release-1``, in us-east1): its first job loses its machines after it
started (the emulator's ``--preempt``), attempt 1 runs to the end; its chief prints a line
per step. Then a job without a key. Every job runs its command on this host.
"""
from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.polling import wait_for
from tests.submission.helpers import job as python_job
from vxtrain import api as vx
from vxtrain.backends import open_backend
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.submission import Session
from vxtrain.submission.ledger import Query
from vxtrain.submission.names import parent_of
from vxtrain.ui.server import Ui, start
from vxtrain.ui.source import Source
from vxtrain.vocab.kinds import CUSTOM, JobState

PROJECT, REGION = "p", "us-east1"
IMAGE = "us-docker.pkg.dev/p/r/train:1"
#: The chief's code: a line per step, 12 steps of 0.15 s (the first job is preempted after 0.6 s).
STEPS = "import time\nfor i in range(12):\n    print(f'step {i}', flush=True)\n    time.sleep(0.15)\n"


@dataclass
class World:
    handle: EmulatorHandle
    release: list[str]  # the release's jobs: attempt 0 (preempted), attempt 1 (succeeded)
    lone: str  # a job without a key


def create(handle: EmulatorHandle, code: str = "pass", labels: dict[str, str] | None = None,
           name: str = "unit") -> str:
    """A job vxtrain did not submit, created through the backend; its name."""
    with open_backend(region=REGION, endpoint=handle.address) as backend:
        body = {**python_job(code, name), "labels": labels or {}}
        return str(backend.create(CUSTOM, parent_of(PROJECT, REGION), body)["name"])


def ended(handle: EmulatorHandle, name: str) -> None:
    with open_backend(endpoint=handle.address) as backend:
        wait_for(lambda: JobState.of(backend.get(CUSTOM, name)["state"]).terminal, 30, f"{name} to end")


@pytest.fixture(scope="package")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    handle = start_emulator(environ={}, out=io.StringIO(), preempt=[f"{REGION}:0.6:1"])
    try:
        spec = tmp_path_factory.mktemp("ui") / "release.yaml"
        spec.write_text(json.dumps({
            "display_name": "release", "project": PROJECT, "region": REGION,
            "chief": {"machine_type": "n1-standard-4", "image": IMAGE, "command": [sys.executable, "-c", STEPS]},
            "recovery": {"max_recoveries": 1, "strategy": "same"}}))
        done = vx.submit(spec, endpoint=handle.address, idempotency_key="release-1", wait=True)
        assert [(a["attempt"], a["outcome"]) for a in done["attempts"]] == [(0, "preempted"), (1, "succeeded")], done
        release = [a["name"] for a in done["attempts"]]
        lone = create(handle, name="lone")
        ended(handle, lone)
        yield World(handle, release, lone)
    finally:
        handle.stop(grace=None)


@pytest.fixture
def ui(world: World, tmp_path: Path) -> Iterator[Ui]:
    """A ui over the world's region, its plan page reading specs under ``tmp_path``."""
    with Session(endpoint=world.handle.address) as session:
        served = start(Source.of(session, Query(PROJECT, (REGION,))), root=tmp_path)
        try:
            yield served
        finally:
            served.stop()
