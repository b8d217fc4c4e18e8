"""Real frameworks through ``vxtrain local-run``: PyTorch DDP over gloo, TensorFlow PS training.

Skipped (with the reason) when the framework is not installed:
``pip install torch==2.13.0`` (CPU build) and
``pip install tensorflow-cpu==2.21.0 && pip install --no-deps tf-keras==2.21.0``.
Timings on a 2-core machine: the PyTorch run ~15-20 s, the TensorFlow run ~15-25 s.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "configs" / "examples"


def need(*modules: str) -> None:
    """Skip unless every module is installed (found, not imported: TensorFlow takes seconds)."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")


def local_run(spec: Path, timeout: float) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python -m vxtrain local-run SPEC``, and how long it took."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "vxtrain", "local-run", str(spec)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    return proc, time.monotonic() - started


@pytest.mark.torch
@pytest.mark.slow
def test_torch_ddp_all_reduce_across_chief_and_two_workers() -> None:
    need("torch")
    proc, seconds = local_run(EXAMPLES / "torch-ddp.yaml", timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    for name, rank in (("workerpool0-0", 0), ("workerpool1-0", 1), ("workerpool1-1", 2)):
        assert f"[{name}] role=" in proc.stdout and f"rank={rank} world_size=3" in proc.stdout
        assert f"[{name}] all_reduce: rank {rank} got 6, expected 6 OK" in proc.stdout
        assert re.search(rf"\[{name}\] ddp: rank {rank} .* identical on all ranks: True", proc.stdout)
    print(f"torch DDP local-run took {seconds:.1f} s")


@pytest.mark.tensorflow
@pytest.mark.slow
def test_tensorflow_parameter_server_training_with_model_fit() -> None:
    need("tensorflow", "tf_keras")
    proc, seconds = local_run(EXAMPLES / "tf-ps.yaml", timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    out = proc.stdout
    # TFConfigClusterResolver read our TF_CONFIG on every task:
    for name, task in (("workerpool0-0", "chief:0"), ("workerpool1-0", "worker:0"),
                       ("workerpool1-1", "worker:1"), ("workerpool2-0", "ps:0")):
        assert re.search(rf"\[{name}\] task {task} cluster=\{{'chief': \['127.0.0.1:\d+'\], "
                         rf"'worker': \[[^\]]+\], 'ps': \['127.0.0.1:\d+'\]\}}", out), name
    assert re.search(r"\[workerpool0-0\] chief: trained 40 steps on 2 workers, 1 ps; loss ", out)
    assert "[workerpool0-0] chief: PS training done" in out
    # Workers and the parameter server block in server.join(); the runner stops them.
    assert "[vxtrain] stopped workerpool1-0, workerpool1-1, workerpool2-0" in out
    print(f"TensorFlow PS local-run took {seconds:.1f} s")
