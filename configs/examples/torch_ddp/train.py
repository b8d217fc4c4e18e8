"""DDP on gloo across the chief and the workers: an all-reduce, then a few training steps.

Checks, on every rank, that

* an all-reduce of ``rank + 1`` sums to ``1 + 2 + ... + world_size``, and
* after DistributedDataParallel steps on rank-dependent data, every rank holds
  the same weights (DDP averaged the gradients).

Prints ``all_reduce: ... OK`` and exits non-zero on any mismatch.
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


def check_all_reduce(rank: int, world: int) -> bool:
    """Sum ``rank + 1`` over all ranks and compare with the closed form."""
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    expected = world * (world + 1) / 2
    ok = value.item() == expected
    print(f"all_reduce: rank {rank} got {value.item():g}, expected {expected:g} "
          f"{'OK' if ok else 'MISMATCH'}", flush=True)
    return ok


def train_ddp(rank: int, world: int, steps: int = 5) -> bool:
    """A few DDP steps on rank-dependent data; the weights must agree across ranks."""
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(100 + rank)
    for _ in range(steps):
        x = torch.randn(16, 4, generator=generator)
        loss = ((model(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    same = all(torch.allclose(g, gathered[0]) for g in gathered)
    print(f"ddp: rank {rank} loss {loss.item():.4f}, weights identical on all ranks: {same}",
          flush=True)
    return same


def main() -> int:
    """Join the process group through env:// and run both checks."""
    os.environ.update(cluster.torch_env())  # no-op where MASTER_ADDR etc. are already set
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    print(f"role={cluster.role()} rank={rank} world_size={world} "
          f"master={os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", flush=True)
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    try:
        ok = check_all_reduce(rank, world) and train_ddp(rank, world)
        # No rank tears down while another still talks to it: rank 0 hosts the
        # rendezvous store, and a rank whose peer exited first can abort in gloo's
        # threads at exit ("terminate called without an active exception").
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
