"""The job store: the state walk and what a cancel does to it."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from google.api_core import exceptions as gexc

from tests.polling import wait_for
from tests.backends.emulator.conftest import PARENT, TERMINAL, State, custom_job, pool, py, wait_until


def test_state_walk_with_simulate(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=0.2)
    client = connect(handle)
    name = client.create_custom_job(parent=PARENT, custom_job=custom_job()).name
    seen: list[Any] = []

    def ended() -> Any:
        """The job once it has ended; every state it passes through is noted in ``seen``."""
        job = client.get_custom_job(name=name)
        if not seen or seen[-1] != job.state:
            seen.append(job.state)
        return job if job.state in TERMINAL else None

    job = wait_for(ended, 10, "the simulated job to end", interval=0.005)
    walk = [State.JOB_STATE_QUEUED, State.JOB_STATE_PENDING, State.JOB_STATE_RUNNING, State.JOB_STATE_SUCCEEDED]
    assert handle.emulator.history(name) == walk
    assert seen[0] == State.JOB_STATE_QUEUED and seen[-1] == State.JOB_STATE_SUCCEEDED
    assert seen == [s for s in walk if s in seen]  # a poller sees the states in order
    assert job.create_time <= job.start_time <= job.end_time and not job.error.message


def test_a_repeated_cancel_changes_nothing(make_emulator: Any, connect: Any, tmp_path: Path) -> None:
    handle = make_emulator(out=io.StringIO())
    client = connect(handle)
    started = tmp_path / "started"
    code = f"import time; open({str(started)!r}, 'w').close(); time.sleep(60)"
    job = client.create_custom_job(parent=PARENT, custom_job=custom_job(pools=[pool(py(code))]))
    wait_for(started.exists, 15, "the replica to start")
    for _ in range(3):
        try:
            client.cancel_custom_job(name=job.name)
        except gexc.FailedPrecondition:  # already CANCELLED: Vertex refuses, as it should
            break
    assert wait_until(client, job.name, TERMINAL).state == State.JOB_STATE_CANCELLED
    assert handle.emulator.history(job.name).count(State.JOB_STATE_CANCELLING) == 1
