"""Which of this host's GPUs each replica of a local run gets.

On Vertex AI every replica is a machine of its own, with the GPUs its pool asks
for; locally all replicas share one host. A local run (``local-run``,
``submit --target local``, the emulator) therefore hands the host's GPUs out:

* the inventory is vxtrain's own ``CUDA_VISIBLE_DEVICES`` when it is set (indices or
  ``GPU-``/``MIG-`` UUIDs, comma-separated; empty: none), else the GPUs NVIDIA's
  management library (nvidia-ml-py, optional) reports, else ``nvidia-smi -L``'s,
  else none — ``--gpus LIST`` replaces it;
* in pool order (chief, workers, parameter servers, evaluators; replicas in index
  order; Reduction Server replicas are not run locally) a replica whose pool asks
  for ``accelerator.count`` = n GPUs gets the next n entries as its
  ``CUDA_VISIBLE_DEVICES``; a replica without GPUs in its spec (a TPU pool
  included) gets ``""``, as its Vertex machine has none;
* a host with no GPU runs every replica on the CPU (one note says so); a host with
  GPUs, but fewer than the job needs, refuses the job before anything starts
  (:class:`~vxtrain.errors.GpuShortageError`), unless ``--share-gpus`` hands them
  out round-robin or ``--no-gpus`` runs every replica on the CPU (warnings say so).

Discovered GPUs are named by UUID: NVML and nvidia-smi number GPUs by PCI bus,
CUDA (by default) fastest first, so an index could name another GPU inside the
replica. This module returns data and messages; the runner prints them.
"""
from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from vxtrain import catalog, slots
from vxtrain.diagnostics import plural
from vxtrain.errors import GpuShortageError, UsageError
from vxtrain.model import Job, Pool

#: The variable CUDA reads, for vxtrain's own inventory and for each replica.
VISIBLE = "CUDA_VISIBLE_DEVICES"
#: One entry of a device list: an index, or a GPU/MIG UUID (CUDA accepts either).
_DEVICE = re.compile(r"[0-9]+|(?:GPU|MIG)-[0-9A-Za-z/-]+")
#: A GPU line of ``nvidia-smi -L``: ``GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5f2d...)``.
_SMI_GPU = re.compile(r"^GPU [0-9]+: .*\(UUID: (GPU-[0-9A-Za-z-]+)\)\s*$", re.MULTILINE)
#: Seconds ``nvidia-smi -L`` may take (a wedged driver can hang it).
_SMI_TIMEOUT = 10.0
#: NCCL's own words when two ranks of one communicator share a GPU.
NCCL_DUPLICATE = "Duplicate GPU detected"
#: The options of a local run, for messages that name them.
OPTIONS_HINT = ("--gpus LIST (the GPUs to hand out, e.g. --gpus 0,1), --share-gpus (hand them out "
                "round-robin; NCCL refuses two ranks on one GPU) or --no-gpus (every replica on the CPU)")


@dataclass(frozen=True)
class GpuOptions:
    """What the user said about GPUs: ``--gpus LIST``, ``--share-gpus``, ``--no-gpus``."""

    gpus: tuple[str, ...] | None = None  # replaces the host's inventory
    share: bool = False
    none: bool = False


@dataclass(frozen=True)
class Inventory:
    """The GPUs a run may hand out, and where that list came from (for messages)."""

    devices: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class GpuPlan:
    """Each replica's GPUs for one run, and what to tell the user about them."""

    devices: Mapping[str, tuple[str, ...]]  # replica name (workerpool1-0) → its devices
    inventory: Inventory
    needed: int  # GPUs the job's replicas ask for in all
    share: bool = False
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def visible(self, replica: str) -> str:
        """The replica's ``CUDA_VISIBLE_DEVICES`` (``""``: no GPU)."""
        return ",".join(self.devices.get(replica, ()))

    def quiet(self) -> GpuPlan:
        """The same plan without its messages (a study says them once, not per trial)."""
        return replace(self, notes=(), warnings=())

    @property
    def on_gpus(self) -> bool:
        """Whether any replica gets a GPU."""
        return any(self.devices.values())


# --- the device list syntax ------------------------------------------------------------

def split_devices(text: str) -> tuple[list[str], str | None]:
    """``"0, 1,GPU-ab"`` → (the entries up to the first one that is not a device, that one or None)."""
    valid: list[str] = []
    for raw in text.split(",") if text.strip() else []:
        entry = raw.strip()
        if _DEVICE.fullmatch(entry) is None:
            return valid, entry
        valid.append(entry)
    return valid, None


def parse_gpu_list(text: str) -> tuple[str, ...]:
    """``--gpus LIST``: comma-separated indices or UUIDs, each once (``""``: none). UsageError otherwise."""
    devices, bad = split_devices(text)
    if bad is not None:
        raise UsageError(f"--gpus takes GPU indices or UUIDs separated by commas (e.g. 0,1 or "
                         f"GPU-5f2d0c1e-...), or '' for none; got {bad!r} in {text!r}")
    twice = sorted({d for d in devices if devices.count(d) > 1})
    if twice:
        raise UsageError(f"--gpus names {', '.join(twice)} more than once; to let replicas share GPUs, "
                         "list each once and add --share-gpus")
    return tuple(devices)


def options_from_flags(gpus: str | None, share: bool, no_gpus: bool) -> GpuOptions:
    """GpuOptions from the three flags; UsageError when --no-gpus meets one of the others."""
    if no_gpus and (gpus is not None or share):
        raise UsageError("--no-gpus runs every replica on the CPU: drop --gpus and --share-gpus, or --no-gpus")
    return GpuOptions(None if gpus is None else parse_gpu_list(gpus), share, no_gpus)


# --- the host's inventory ---------------------------------------------------------------

def host_inventory(environ: Mapping[str, str] | None = None) -> Inventory:
    """This host's GPUs: ``CUDA_VISIBLE_DEVICES`` when set, else NVML's, else ``nvidia-smi -L``'s."""
    env = os.environ if environ is None else environ
    if VISIBLE in env:
        return _from_visible(env[VISIBLE])
    for found in (_nvml_uuids(), _smi_uuids(env.get("PATH"))):
        if found is not None:
            return found
    return Inventory((), "CUDA_VISIBLE_DEVICES is not set, and neither nvidia-ml-py nor nvidia-smi found one")


def _from_visible(value: str) -> Inventory:
    # As CUDA reads it: the entries up to the first that is not a device (so the
    # common CUDA_VISIBLE_DEVICES=-1 means none); a repeated entry counts once.
    devices, _ = split_devices(value)
    return Inventory(tuple(dict.fromkeys(devices)), f"{VISIBLE}={value!r}")


def _nvml_uuids() -> Inventory | None:
    """The GPUs NVML reports, by UUID; None without nvidia-ml-py or a working driver."""
    try:
        import pynvml  # lazy: nvidia-ml-py is optional, and only a GPU job's local run asks the host
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            uuids = [pynvml.nvmlDeviceGetUUID(h) for h in handles]
        finally:
            pynvml.nvmlShutdown()
    except pynvml.NVMLError:
        return None  # installed, but no driver here: nvidia-smi gets its turn
    names = tuple(u.decode() if isinstance(u, bytes) else str(u) for u in uuids)
    return Inventory(names, "NVIDIA's management library (nvidia-ml-py)")


def _smi_uuids(path: str | None) -> Inventory | None:
    """The GPUs ``nvidia-smi -L`` lists, by UUID; None without nvidia-smi or when it fails."""
    program = shutil.which("nvidia-smi", path=path)
    if program is None:
        return None
    try:
        done = subprocess.run([program, "-L"], capture_output=True, text=True, timeout=_SMI_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None  # e.g. "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
    return Inventory(tuple(_SMI_GPU.findall(done.stdout)), "nvidia-smi -L")


# --- what the job asks for, and who gets what ------------------------------------------------

def pool_gpus(pool: Pool) -> int:
    """GPUs per replica of ``pool``: its accelerator count, 0 for TPUs and pools without one."""
    acc = pool.accelerator
    if acc is None or not acc.type or catalog.is_tpu(pool.machine_type):
        return 0
    return 0 if acc.type in catalog.tpu_accelerator_types() else max(0, acc.count or 0)


def replica_asks(job: Job) -> list[tuple[str, Pool, int]]:
    """(replica name, pool, GPUs) for every replica a local run starts, in pool and index order."""
    return [(slots.replica_name(pool.index, i), pool, pool_gpus(pool))
            for pool in job.ordered_pools() if pool.role != "reduction_server"
            for i in range(pool.replicas or 0)]


def assign(counts: Sequence[int], inventory: Sequence[str], *,
           share: bool = False) -> list[tuple[str, ...]] | None:
    """Each replica's devices, in order: the next ``counts[i]`` entries of ``inventory``.

    None when the inventory is short, unless ``share``: then the entries go round
    robin, each replica getting ``min(count, len(inventory))`` distinct ones (CUDA
    cannot show one device twice to one process).
    """
    if sum(counts) <= len(inventory):
        entries = iter(inventory)
        return [tuple(itertools.islice(entries, n)) for n in counts]
    if not share or not inventory:
        return None
    out, start = [], 0
    for n in counts:
        take = min(n, len(inventory))
        out.append(tuple(inventory[(start + k) % len(inventory)] for k in range(take)))
        start = (start + take) % len(inventory)
    return out


def resolve(job: Job, options: GpuOptions = GpuOptions(), environ: Mapping[str, str] | None = None, *,
            emulator: bool = False) -> GpuPlan:
    """Each replica's GPUs for a local run of ``job``; raises GpuShortageError (nothing started)
    when the host has GPUs but fewer than the job needs and ``options`` allow no way out.

    The inventory is read only when some replica asks for GPUs. ``emulator``: the
    messages name the options of ``vxtrain emulator`` and the CustomJob's keys.
    """
    asks = replica_asks(job)
    needed = sum(n for _, _, n in asks)
    nothing = {name: () for name, _, _ in asks}
    if options.none or needed == 0:
        warnings = (_no_gpus_warning(asks),) if options.none and needed else ()
        return GpuPlan(nothing, Inventory((), "--no-gpus" if options.none else "not read"), needed, warnings=warnings)
    inventory = Inventory(options.gpus, "--gpus") if options.gpus is not None else host_inventory(environ)
    if not inventory.devices:
        empty = "--gpus names no GPU" if options.gpus is not None else f"this host has no GPU ({inventory.source})"
        note = f"{empty}: the job asks for {plural(needed, 'GPU')}; every replica runs on the CPU"
        return GpuPlan(nothing, inventory, needed, notes=(note,))
    got = assign([n for _, _, n in asks], inventory.devices, share=options.share)
    if got is None:
        raise GpuShortageError(shortage_message(asks, inventory, emulator=emulator))
    devices = {name: d for (name, _, _), d in zip(asks, got)}
    warnings = (_share_warning(needed, inventory),) if needed > len(inventory.devices) else ()
    return GpuPlan(devices, inventory, needed, options.share, warnings=warnings)


def described(inventory: Inventory) -> str:
    """Where the inventory came from, with its devices when the source does not show them."""
    if inventory.source.startswith(VISIBLE) or not inventory.devices:
        return inventory.source
    return f"{inventory.source}: {', '.join(inventory.devices)}"


def _no_gpus_warning(asks: Sequence[tuple[str, Pool, int]]) -> str:
    pools = _pools_asking(asks)
    return (f"--no-gpus: {', '.join(pools)} ask{'s' if len(pools) == 1 else ''} for GPUs; "
            "every replica runs on the CPU")


def _share_warning(needed: int, inventory: Inventory) -> str:
    have = len(inventory.devices)
    return (f"--share-gpus: the job asks for {plural(needed, 'GPU')} and this host has {have} "
            f"({described(inventory)}): "
            f"replicas share them round-robin. NCCL refuses two ranks of one job on one GPU "
            f"(\"{NCCL_DUPLICATE}\"): use gloo, or fewer GPUs per job")


def _pools_asking(asks: Sequence[tuple[str, Pool, int]]) -> list[str]:
    """``chief (1 GPU)``, ``workers (2 replicas x 1 GPU)``: the pools that ask for GPUs, in order."""
    out: dict[str, str] = {}
    for _, pool, n in asks:
        if n:
            reps = pool.replicas or 0
            out[pool.role] = f"{pool.role} ({f'{reps} replicas x ' if reps > 1 else ''}{plural(n, 'GPU')})"
    return list(out.values())


def shortage_message(asks: Sequence[tuple[str, Pool, int]], inventory: Inventory, *, emulator: bool = False) -> str:
    """What each pool needs, what the host has, and the options (the refusal's text)."""
    needed = sum(n for _, _, n in asks)
    have = len(inventory.devices)
    lines = [f"the job needs {plural(needed, 'GPU')} and this host has {have} ({described(inventory)}); "
             "nothing was started:"]
    seen: set[str] = set()
    for _, pool, n in asks:
        if n and pool.role not in seen:
            seen.add(pool.role)
            reps = pool.replicas or 0
            lines.append(f"  {_count_key(pool, emulator)}: {plural(n, 'GPU')} x {plural(reps, 'replica')} "
                         f"= {n * reps} ({slots.SLOTS[pool.index].cluster_key})")
    where = "start the emulator with " if emulator else "pass "
    lines.append(f"Run it on a host with {needed} GPUs, lower the counts, or {where}{OPTIONS_HINT}.")
    return "\n".join(lines)


def _count_key(pool: Pool, emulator: bool) -> str:
    """The key that sets the pool's GPUs: the spec's, or the CustomJob's for the emulator."""
    if emulator:
        return f"workerPoolSpecs[{pool.index}].machineSpec.acceleratorCount"
    return f"{pool.role}.accelerator.count"


# --- studies: trials at once ------------------------------------------------------------------

@dataclass(frozen=True)
class TrialGpus:
    """How many trials of a study may run at once, the GPUs of each trial slot, and why."""

    at_once: int
    slots: list[tuple[str, ...] | None] = field(default_factory=list)  # None: the plan as resolved
    note: str | None = None


def trial_slots(plan: GpuPlan, parallel: int) -> TrialGpus:
    """Trials at once: ``parallel``, or fewer when the GPUs fit fewer runs of the job.

    Each slot gets its own ``plan.needed`` GPUs; with ``--share-gpus`` and a host too
    small for one trial, one trial at a time shares them all.
    """
    have = len(plan.inventory.devices)
    if not plan.on_gpus:
        return TrialGpus(parallel, [None] * parallel)
    fits = have // plan.needed
    if fits == 0:  # only --share-gpus gets here
        slots_ = [plan.inventory.devices]
    else:
        slots_ = [plan.inventory.devices[k * plan.needed:(k + 1) * plan.needed] for k in range(min(parallel, fits))]
    note = None
    if len(slots_) < parallel:
        note = (f"parallel_trials is {parallel}, but each trial needs {plural(plan.needed, 'GPU')} and this "
                f"host has {have} ({described(plan.inventory)}): {plural(len(slots_), 'trial')} at a time")
    return TrialGpus(len(slots_), list(slots_), note)
