"""DDP with one GPU per rank over NCCL; on a host without GPUs, the same steps on the CPU over gloo.

Every rank prints what it was given (its ``CUDA_VISIBLE_DEVICES``, how many GPUs
torch sees, the backend), then checks that

* an all-reduce of ``rank + 1`` sums to ``1 + 2 + ... + world_size``, and
* after a few DistributedDataParallel steps on rank-dependent data, every rank
  holds the same weights (DDP averaged the gradients).

It exits non-zero on a mismatch, and when a rank that asked for one GPU sees
another number of them (``vxtrain local-run`` gives each replica its own).
"""
from __future__ import annotations

import gc
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from vxtrain import cluster


def pick_device() -> tuple[str, torch.device]:
    """NCCL on this rank's GPU when there is one, else gloo on the CPU (a laptop, CI)."""
    if torch.cuda.is_available():
        return "nccl", torch.device("cuda", 0)  # the replica sees only its own GPU(s): index 0 is it
    return "gloo", torch.device("cpu")


def check_all_reduce(rank: int, world: int, device: torch.device) -> bool:
    """Sum ``rank + 1`` over every rank and compare with the closed form."""
    value = torch.tensor([float(rank + 1)], device=device)
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    expected = world * (world + 1) / 2
    ok = value.item() == expected
    print(f"all_reduce: rank {rank} got {value.item():g}, expected {expected:g} {'OK' if ok else 'MISMATCH'}",
          flush=True)
    return ok


def train_ddp(rank: int, world: int, device: torch.device, steps: int = 5) -> bool:
    """A few DDP steps on rank-dependent data; the weights must then agree on every rank."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 1).to(device)
    model = DistributedDataParallel(layer, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(100 + rank)
    for _ in range(steps):
        x = torch.randn(16, 4, generator=generator).to(device)
        loss = ((model(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    same = all(torch.allclose(g, gathered[0]) for g in gathered)
    print(f"ddp: rank {rank} on {device} loss {loss.item():.4f}, weights identical on all ranks: {same}",
          flush=True)
    return same


def main() -> int:
    """Join the process group through env:// on the picked backend and run both checks."""
    os.environ.update(cluster.torch_env())  # no-op where MASTER_ADDR etc. are already set
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    backend, device = pick_device()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    print(f"role={cluster.role()} rank={rank} world_size={world} CUDA_VISIBLE_DEVICES={visible!r} "
          f"device_count={torch.cuda.device_count()} backend={backend}", flush=True)
    if backend == "nccl" and torch.cuda.device_count() != 1:
        print(f"rank {rank} asked for 1 GPU and sees {torch.cuda.device_count()}", file=sys.stderr)
        return 1
    if backend == "nccl":
        torch.cuda.set_device(device)
    # device_id binds the group to this rank's GPU, so NCCL's barrier() knows which one to use
    # (without it torch warns "barrier(): using the device under current context").
    dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world,
                            timeout=timedelta(seconds=60), device_id=device if backend == "nccl" else None)
    try:
        ok = check_all_reduce(rank, world, device) and train_ddp(rank, world, device)
        # No rank tears down while another still talks to it: rank 0 hosts the rendezvous store.
        # The DDP model holds the process group and sits in reference cycles: collected
        # at interpreter exit, after destroy_process_group, gloo's threads abort there
        # ("terminate called without an active exception"). Collect it while the group lives.
        gc.collect()
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
