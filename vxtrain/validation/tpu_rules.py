"""TPU rules: a TPU job's shape, its slice size (topology or cloud-tpu count), the
accelerators a TPU machine takes, and Spot with a multi-host slice.

The facts are the catalog's (tpu_machines.csv, read from TRAINING_MACHINES_DOC#tpu):

- "When you use a TPU VM …, you must only use a single worker pool for custom
  training, and you must configure this worker pool to use only one replica."
  A multi-host slice is still one replica: its hosts come from the topology.
  (The chief's replica count is role_rules.py's: pool 0 always has one.)
- ct5lp/ct6e/tpu7x: "Set machineSpec.tpuTopology to a supported topology for the
  machine type" (the page's table per machine type).
- cloud-tpu: acceleratorType TPU_V2 or TPU_V3, acceleratorCount "8 for single
  TPU or 32 or multiple of 32 for TPU Pods".
- No GPU on a TPU machine (the page's TPU machines take their own chips); a TPU
  type on a GPU or CPU machine is accelerator_rules.py's (the machine's
  accelerator list), and an accelerator type training does not offer too.
- SPOT_DOC: "Using Spot VMs with TPU Pods isn't supported."

Where a TPU trains is region_rules.py's (the machine's region key, whether or not
the spec names an accelerator type). Each diagnostic is at the key that breaks
the rule: ``written_at`` finds a topology set through ``extra:`` too.
"""
from __future__ import annotations

from collections.abc import Iterator

from vxtrain import catalog
from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.loading.document import NativeSpec
from vxtrain.model import Accelerator, Job, Pool, written_at
from vxtrain.validation._common import RS, TRAINING_MACHINES_DOC, key_path, or_list, quote_list, scheduling_value

TPU_DOC = f"{TRAINING_MACHINES_DOC}#tpu"
SPOT_DOC = "https://cloud.google.com/vertex-ai/docs/training/use-spot-vms"


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """The TPU diagnostics of ``job``: none for a job without TPU machines or tpu_topology."""
    tpu_pools = [(p, m) for p in job.ordered_pools() if (m := catalog.tpu_machine(p.machine_type)) is not None]
    for pool in job.ordered_pools():
        # A machine type training does not offer is machine_rules.py's (a typo of a TPU type, often).
        if (pool.role != RS and pool.tpu_topology is not None and pool.machine_type is not None
                and catalog.offered(pool.machine_type) and not catalog.is_tpu(pool.machine_type)):
            yield _topology_not_tpu(pool, native)
    if not tpu_pools:
        return
    yield from _single_pool(job, tpu_pools[0][0], native)
    for pool, machine in tpu_pools:
        yield from _accelerator(pool, machine, native)
        yield from _topology(pool, machine, native)
        yield from _spot(job, pool, machine, native)


def _topology_not_tpu(pool: Pool, native: NativeSpec) -> Diagnostic:
    tpus = ", ".join(m.machine_type for m in catalog.tpu_machines() if m.needs_topology)
    name = native.where((pool.role,))["path"]
    return error("tpu-topology-not-tpu", f"tpu_topology {pool.tpu_topology!r} is for TPU VM slices, and {name} "
                 f'has "{pool.machine_type}": remove it, or use a TPU machine type ({tpus}) ({TPU_DOC})',
                 **native.where(written_at(native.data, pool.role, "tpu_topology") or (pool.role,)))


def _single_pool(job: Job, tpu_pool: Pool, native: NativeSpec) -> Iterator[Diagnostic]:
    """One worker pool, pool 0: every other pool is an error at its own key (named as the user wrote it)."""
    machine = f'"{tpu_pool.machine_type}"'
    tpu_name = native.where((tpu_pool.role,))["path"]
    chief = native.where(("chief",))["path"] if tpu_pool.role != "chief" else tpu_name
    for pool in job.ordered_pools():
        if pool.role == "chief":
            continue
        name = native.where((pool.role,))["path"]
        where = "" if tpu_pool.role == "chief" else f" (and put {machine} in {chief}, pool 0)"
        yield error("tpu-single-pool", f"{tpu_name} uses the TPU machine {machine}, and a TPU job has one "
                    f"worker pool, pool 0 ({chief}), with one replica: 'you must only use a single worker pool "
                    f"… and … only one replica' ({TPU_DOC}); remove {name}{where}. A multi-host slice is one "
                    "replica: its hosts come from the topology", **native.where((pool.role,)))


def _accelerator(pool: Pool, machine: catalog.TpuMachine, native: NativeSpec) -> Iterator[Diagnostic]:
    acc = pool.accelerator
    if acc is None:
        if not machine.needs_topology:  # cloud-tpu is sized by its accelerator
            counts = " or ".join(s.describe() for s in machine.counts(machine.accelerator_types[0]))
            yield error("tpu-accelerator-missing", f'machine type "{machine.machine_type}" needs its TPUs: add '
                        f"accelerator: {{type: {' or '.join(machine.accelerator_types)}, count: {counts}}} "
                        f"({TPU_DOC})",
                        **native.where(key_path(native, pool.role, "machine_type")))
        return
    if acc.type is None or acc.type not in catalog.accelerator_types() or not catalog.training_accelerator(acc.type):
        return  # the schema or accelerator_rules.py reports it
    base = key_path(native, pool.role, "accelerator")
    if acc.type not in machine.accelerator_types:
        yield _wrong_accelerator(machine, acc.type, native, base + ("type",))
    elif not machine.needs_topology:
        yield from _tpu_count(machine, acc, native, base + ("count",))


def _wrong_accelerator(machine: catalog.TpuMachine, acc_type: str, native: NativeSpec,
                       path: tuple[str | int, ...]) -> Diagnostic:
    what = "a TPU type of another machine" if acc_type in catalog.tpu_accelerator_types() else "a GPU"
    mt = machine.machine_type
    if machine.needs_topology:
        named = f", or {or_list(machine.accelerator_types)}" if machine.accelerator_types else ""
        takes = (f"its {machine.generation} chips come with it, sized by tpu_topology: leave accelerator out "
                 f"(the page's steps set none){named}")
    else:
        takes = f"it takes {or_list(machine.accelerator_types)} only"
    return error("tpu-accelerator", f'Accelerator "{acc_type}" is not supported for machine type "{mt}": '
                 f"{acc_type} is {what}, and \"{mt}\" is a {machine.generation} machine; {takes} ({TPU_DOC})",
                 **native.where(path))


def _tpu_count(machine: catalog.TpuMachine, acc: Accelerator, native: NativeSpec,
               path: tuple[str | int, ...]) -> Iterator[Diagnostic]:
    if acc.type is None or acc.count is None or machine.count_size(acc.type, acc.count) is not None:
        return
    sizes = " or ".join(s.describe() for s in machine.counts(acc.type))
    yield error("tpu-accelerator-count", f'The accelerator count "{acc.count}" is not allowed for {acc.type} on '
                f'"{machine.machine_type}": it takes {sizes} ({TPU_DOC})', **native.where(path))


def _topology(pool: Pool, machine: catalog.TpuMachine, native: NativeSpec) -> Iterator[Diagnostic]:
    topology = pool.tpu_topology
    mt = machine.machine_type
    if not machine.needs_topology:
        if topology is not None:
            yield warning("tpu-topology-cloud-tpu", f'"{mt}" is sized by its accelerator count; the page documents '
                          f"tpuTopology for ct5lp, ct6e and tpu7x machines only ({TPU_DOC}): remove tpu_topology "
                          f"{topology!r} unless you know Vertex AI takes it",
                          **native.where(written_at(native.data, pool.role, "tpu_topology") or (pool.role,)))
        return
    takes = ", ".join(s.describe() for s in machine.sizes)
    if topology is None:
        yield error("tpu-topology-missing", f'machine type "{mt}" needs tpu_topology (machineSpec.tpuTopology), '
                    f"one of: {takes} ({TPU_DOC})", **native.where(key_path(native, pool.role, "machine_type")))
    elif machine.topology(topology) is None:
        others = [m.machine_type for m in catalog.tpu_machines() if m.machine_type != mt
                  and m.generation == machine.generation and m.topology(topology) is not None]
        hint = f"; {topology} is a topology of {quote_list(others)}" if others else ""
        yield error("tpu-topology", f'tpu_topology "{topology}" is not supported for machine type "{mt}": it takes '
                    f"{takes}{hint} ({TPU_DOC})",
                    **native.where(written_at(native.data, pool.role, "tpu_topology") or (pool.role,)))


def _spot(job: Job, pool: Pool, machine: catalog.TpuMachine, native: NativeSpec) -> Iterator[Diagnostic]:
    strategy, at = scheduling_value(job, "strategy")
    if strategy != "SPOT":
        return
    acc = pool.accelerator
    size = catalog.tpu_size(pool.machine_type, pool.tpu_topology, acc.type if acc else None,
                            acc.count if acc else None)
    if size is None or not size.multi_host:
        return  # no slice, or one the rules above refuse
    single = [s for s in machine.sizes if not s.multi_host and s.accelerator_type == size.accelerator_type]
    if size.topology is not None:
        what = f'tpu_topology {size.topology} on "{pool.machine_type}" spans {size.hosts} hosts (a TPU Pod slice)'
        fix = f"a single-host topology ({', '.join(str(s.topology) for s in single)})" if single else ""
    else:
        what = f'{acc.count if acc else "?"} x {size.accelerator_type} on "{pool.machine_type}" is a TPU Pod'
        fix = f"accelerator count {' or '.join(s.describe() for s in single)}" if single else ""
    name = native.where((pool.role,))["path"]
    yield error("spot-tpu-pod", f"Using Spot VMs with TPU Pods isn't supported ({SPOT_DOC}): {name}'s {what}; "
                f"use strategy STANDARD{', or ' + fix if fix else ''}", **native.where(at))
