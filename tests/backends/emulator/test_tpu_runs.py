"""A TPU job sent to the emulator (what --target local does) runs on this host's CPU,
and the job's output says so once per pool: TPUs are not emulated."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from tests.backends.emulator.conftest import PARENT, TERMINAL, State, custom_job, pool, py, wait_until


def test_a_tpu_slice_runs_on_the_cpu_and_says_so(make_emulator: Any, connect: Any, tmp_path: Path) -> None:
    out = io.StringIO()
    client = connect(make_emulator(workdir=tmp_path, out=out))
    code = "import os; print('tf_config' if 'TF_CONFIG' in os.environ else 'no tf_config')"
    tpu = pool(py(code), machine_type="tpu7x-standard-4t", tpu_topology="2x2x2")
    job = client.create_custom_job(parent=PARENT, custom_job=custom_job(pools=[tpu]))
    ended = wait_until(client, job.name, TERMINAL)
    assert ended.state == State.JOB_STATE_SUCCEEDED, ended.error.message
    text = out.getvalue()
    assert text.count("TPUs are not emulated locally") == 1
    assert ("[vxtrain] warning: chief asks for a TPU (tpu7x-standard-4t, 2x2x2): TPUs are not emulated locally; "
            "it runs on the CPU") in text
    assert "[workerpool0-0] no tf_config" in text  # one replica: Vertex AI sets no TF_CONFIG
