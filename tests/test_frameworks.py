"""Real frameworks through ``vxtrain local-run``: PyTorch DDP over gloo (and the GPU example's
CPU fallback, and its refusal on a host with too few GPUs), TensorFlow PS training.

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


def local_run(spec: Path, timeout: float, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python -m vxtrain local-run SPEC`` (``env`` added to the environment), and how long it took."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "vxtrain", "local-run", str(spec)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env})
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


@pytest.mark.slow
def test_torch_ddp_gpu_example_is_refused_on_a_host_with_one_gpu() -> None:
    """Refused before any replica starts, so this needs neither torch nor a GPU."""
    proc, _ = local_run(EXAMPLES / "torch-ddp-gpu.yaml", timeout=60, CUDA_VISIBLE_DEVICES="0")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines()[:3] == [
        "vxtrain: error: the job needs 2 GPUs and this host has 1 (CUDA_VISIBLE_DEVICES='0'); nothing was started:",
        "  chief.accelerator.count: 1 GPU x 1 replica = 1 (workerpool0)",
        "  workers.accelerator.count: 1 GPU x 1 replica = 1 (workerpool1)"]


@pytest.mark.torch
@pytest.mark.slow
def test_torch_ddp_gpu_example_falls_back_to_gloo_on_a_host_without_gpus() -> None:
    need("torch")
    # CUDA_VISIBLE_DEVICES="" is vxtrain's own inventory: no GPU, whatever this host has.
    proc, seconds = local_run(EXAMPLES / "torch-ddp-gpu.yaml", timeout=300, CUDA_VISIBLE_DEVICES="")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.stdout.count("[vxtrain] note: this host has no GPU") == 1
    for name, rank in (("workerpool0-0", 0), ("workerpool1-0", 1)):
        assert (f"[{name}] role={'chief' if rank == 0 else 'worker'} rank={rank} world_size=2 "
                "CUDA_VISIBLE_DEVICES='' device_count=0 backend=gloo") in proc.stdout
        assert f"[{name}] all_reduce: rank {rank} got 3, expected 3 OK" in proc.stdout
        assert re.search(rf"\[{name}\] ddp: rank {rank} on cpu .* identical on all ranks: True", proc.stdout)
    print(f"torch DDP (GPU example, on the CPU) local-run took {seconds:.1f} s")
