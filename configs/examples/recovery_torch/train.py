"""A small PyTorch model that survives losing its machines: it checkpoints to
AIP_CHECKPOINT_DIR every few steps and, started again (a new attempt of ``recovery:``),
resumes from the latest checkpoint, so the final weights are the same bit for bit as
those of a run that was never interrupted.

Deterministic by construction: a fixed seed, the data generated from it, one CPU
thread, ``torch.use_deterministic_algorithms(True)``, and every piece of state the
next step depends on (step, model, optimizer, both random generators) in the checkpoint.
A checkpoint is written whole to a temporary file, then renamed over the last one, so a
process killed mid-write leaves the previous checkpoint intact.

Vertex AI sets AIP_CHECKPOINT_DIR and AIP_MODEL_DIR from ``base_output_dir``
(https://cloud.google.com/vertex-ai/docs/training/code-requirements#environment-variables)
as ``gs://`` URIs; a training container reads and writes them as files under ``/gcs/``
(Cloud Storage FUSE: https://cloud.google.com/vertex-ai/docs/training/cloud-storage-file-system).
Run locally, give a local ``base_output_dir`` (``--set base_output_dir=/tmp/recovery``).

At the end it writes ``weights.pt`` and ``weights.sha256`` (a digest of every tensor's
bytes) to AIP_MODEL_DIR. Each start appends ``attempt=N resumed_at=STEP`` to
``starts.log`` in AIP_CHECKPOINT_DIR, and each checkpoint, once in place,
``attempt=N step=STEP`` to ``saves.log`` there (so a test can tell what the next
attempt should resume from).
"""
from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

SEED = 1234
STEPS = 50
CHECKPOINT_EVERY = 5
BATCH = 32
#: A pause per step, so that the emulator's ``--preempt REGION:AFTER`` lands mid-run (a real
#: step takes longer than this tiny model's); RECOVERY_STEP_SECONDS changes it (0: none).
STEP_SECONDS = float(os.environ.get("RECOVERY_STEP_SECONDS", "0.1"))
CHECKPOINT = "checkpoint.pt"


def local_dir(variable: str) -> Path:
    """The folder a Vertex output variable names, as this process reaches it (gs:// → /gcs/)."""
    value = os.environ.get(variable)
    if not value:
        sys.exit(f"{variable} is not set: give the spec a base_output_dir")
    if value.startswith("gs://"):
        mounted = Path("/gcs") / value.removeprefix("gs://")
        if not Path("/gcs").is_dir():
            sys.exit(f"{variable} is {value} and Cloud Storage is not mounted at /gcs here: run locally with "
                     "--set base_output_dir=/tmp/recovery")
        value = str(mounted)
    path = Path(value)
    path.mkdir(parents=True, exist_ok=True)
    return path


def data() -> tuple[torch.Tensor, torch.Tensor]:
    """A fixed regression problem, generated from SEED: y = x·w + noise."""
    generator = torch.Generator().manual_seed(SEED)
    x = torch.randn(1024, 8, generator=generator)
    w = torch.randn(8, 1, generator=generator)
    return x, x @ w + 0.1 * torch.randn(1024, 1, generator=generator)


def fresh() -> dict[str, Any]:
    """Step 0: the model, its optimizer and the batch sampler's generator, all from SEED."""
    torch.manual_seed(SEED)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Dropout(0.1),
                                torch.nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    return {"step": 0, "model": model, "optimizer": optimizer,
            "sampler": torch.Generator().manual_seed(SEED + 1)}


def save(state: dict[str, Any], folder: Path, attempt: str) -> None:
    """Write the checkpoint whole, then rename it into place (never a torn checkpoint), and
    note it in ``saves.log``."""
    temporary = folder / f".{CHECKPOINT}.{os.getpid()}.tmp"
    torch.save({"step": state["step"], "model": state["model"].state_dict(),
                "optimizer": state["optimizer"].state_dict(), "sampler": state["sampler"].get_state(),
                "torch_rng": torch.get_rng_state()}, temporary)
    os.replace(temporary, folder / CHECKPOINT)
    with open(folder / "saves.log", "a", encoding="utf-8") as log:
        log.write(f"attempt={attempt} step={state['step']}\n")


def resume(folder: Path) -> dict[str, Any]:
    """The state of the latest checkpoint in ``folder``, or a fresh one."""
    state = fresh()
    path = folder / CHECKPOINT
    if path.exists():
        saved = torch.load(path, weights_only=True)
        state["model"].load_state_dict(saved["model"])
        state["optimizer"].load_state_dict(saved["optimizer"])
        state["sampler"].set_state(saved["sampler"])
        torch.set_rng_state(saved["torch_rng"])  # dropout's draws go on where they stopped
        state["step"] = saved["step"]
    return state


def train(state: dict[str, Any], folder: Path, attempt: str) -> None:
    """Train from ``state["step"]`` to STEPS, checkpointing every CHECKPOINT_EVERY steps."""
    x, y = data()
    model, optimizer = state["model"], state["optimizer"]
    model.train()
    while state["step"] < STEPS:
        batch = torch.randint(0, len(x), (BATCH,), generator=state["sampler"])
        loss = torch.nn.functional.mse_loss(model(x[batch]), y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        state["step"] += 1
        time.sleep(STEP_SECONDS)
        if state["step"] % CHECKPOINT_EVERY == 0:
            save(state, folder, attempt)
            print(f"step {state['step']}: loss {loss.item():.6f}, checkpointed", flush=True)


def digest(model: torch.nn.Module) -> str:
    """A SHA-256 of every parameter's name and bytes: equal digests, equal weights bit for bit."""
    sha = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        sha.update(name.encode())
        sha.update(bytes(tensor.detach().contiguous().flatten().view(torch.uint8).tolist()))
    return sha.hexdigest()


def main() -> int:
    """Resume (or start), train to the end, write the weights and their digest."""
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # the same reduction order in every run
    checkpoints, model_dir = local_dir("AIP_CHECKPOINT_DIR"), local_dir("AIP_MODEL_DIR")
    state = resume(checkpoints)
    attempt = os.environ.get("VXTRAIN_ATTEMPT", "0")
    with open(checkpoints / "starts.log", "a", encoding="utf-8") as log:
        log.write(f"attempt={attempt} resumed_at={state['step']}\n")
    print(f"attempt {attempt}: starting at step {state['step']} of {STEPS}", flush=True)
    train(state, checkpoints, attempt)
    torch.save(state["model"].state_dict(), model_dir / "weights.pt")
    (model_dir / "weights.sha256").write_text(digest(state["model"]) + "\n")
    print(f"done: {STEPS} steps, weights sha256 {digest(state['model'])}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
