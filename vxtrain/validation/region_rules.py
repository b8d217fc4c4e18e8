"""Region rules: the job's region is a Vertex AI training location, and it
offers the accelerators the pools ask for.

The region checked is the effective one: ``--region`` beats the spec, the spec
beats ``$CLOUD_ML_REGION`` (vxtrain/api.py applies them before validation and
records where the value came from), so a bad region is reported at the flag,
the variable or the spec's ``region:`` line, wherever it was written.

Sources, read 2026-11-23 (vxtrain/catalog/regions.csv, region_accelerators.csv):
LOCATIONS_DOC lists the regions with custom training and the accelerators of
each region (a "†" marks one not available for training); QUOTAS_DOC gives each
region's default training quotas. Where the two pages disagree, vxtrain warns
instead of refusing: which page the API follows is not documented. A TPU
machine's TPU is looked up whether or not the spec names an accelerator type
(catalog/tpu_machines.csv gives each machine's row of the locations table:
ct5lp-hightpu-4t is TPU_V5_LITEPOD, "†" in europe-west4 and us-south1).
"""
from __future__ import annotations

from collections.abc import Iterator

from vxtrain import catalog
from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.loading.document import KeyPath, NativeSpec
from vxtrain.model import Job, Pool, written_at
from vxtrain.validation._common import RS

LOCATIONS_DOC = "https://cloud.google.com/vertex-ai/docs/general/locations"
QUOTAS_DOC = "https://cloud.google.com/vertex-ai/docs/quotas"


def check(job: Job, native: NativeSpec) -> list[Diagnostic]:
    """The region's diagnostics; accelerators are checked only in a known region."""
    name = job.region
    if not isinstance(name, str) or not name:
        return []  # no region (submit asks for one), or a wrong type (the schema's)
    out = list(_region(name, native))
    if catalog.region(name) is not None:
        out += _accelerators(job, name, native)
    return out


def _region(name: str, native: NativeSpec) -> Iterator[Diagnostic]:
    known = catalog.region(name)
    if known is not None and known.training == "yes":
        return
    where = native.where(("region",))
    if known is None:
        near = catalog.near_region(name)
        if near:
            hint = "did you mean " + " or ".join(f'"{r}"' for r in near) + "?"
        elif name.lower() == "global":
            hint = "Vertex AI has no global location for training; pick a region such as us-central1"
        else:
            hint = f"training regions: {', '.join(catalog.training_regions())}"
        yield error("unknown-region", f'region "{name}" is not a Vertex AI location; {hint} ({LOCATIONS_DOC})',
                    **where)
    else:
        yield warning("region-training-unverified", f'region "{name}" is a Vertex AI location, but the locations '
                      f"page does not list custom training there ({LOCATIONS_DOC}); check before you submit",
                      **where)


def _accelerators(job: Job, region: str, native: NativeSpec) -> Iterator[Diagnostic]:
    seen: set[str] = set()
    for pool in job.ordered_pools():
        if pool.role == RS:
            continue  # Reduction Server takes no accelerators (reduction_server_rules.py)
        acc = pool.accelerator
        key = catalog.region_accelerator_key(pool.machine_type, acc.type if acc else None,
                                             acc.count if acc else None)
        if key is None or key in seen:
            continue
        seen.add(key)
        found = catalog.region_accelerator(region, key)
        if found is None or (found.offered and not found.conflict):
            continue  # fine, or not tabulated (an accelerator training does not offer: accelerator_rules.py reports it)
        path = _accelerator_path(native, pool)
        if found.conflict:
            yield _conflict(region, key, found, native, path)
        else:
            yield _not_in_region(region, key, found, pool, native, path)


def _not_in_region(region: str, key: str, found: catalog.RegionAccelerator, pool: Pool, native: NativeSpec,
                   path: KeyPath) -> Diagnostic:
    offering = catalog.regions_offering(key)
    where = f"regions that offer it: {', '.join(offering)}" if offering else "no region lists it"
    # A TPU machine's TPU is checked whether or not the spec names it (catalog/tpu_machines.csv).
    what = f'{key} (machine type "{pool.machine_type}")' if catalog.is_tpu(pool.machine_type) else key
    dagger = (" (the page lists it there marked †: not available for training)" if "†" in found.locations_page
              else "")
    return error("accelerator-not-in-region", f"{what} is not offered for training in {region}{dagger} "
                 f"({LOCATIONS_DOC}); {where}", **native.where(path))


def _conflict(region: str, key: str, found: catalog.RegionAccelerator, native: NativeSpec,
              path: KeyPath) -> Diagnostic:
    if found.offered:
        why = f"the locations page lists it there, but the quotas page says {found.quota_page!r}"
    else:
        why = f"the locations page does not list it there, but the quotas page gives a quota ({found.quota_page})"
    return warning("accelerator-region-unverified", f"{key} in {region} is uncertain: {why} "
                   f"({LOCATIONS_DOC}, {QUOTAS_DOC}); the job may be refused or wait for quota",
                   **native.where(path))


def _accelerator_path(native: NativeSpec, pool: Pool) -> KeyPath:
    """Where the pool's accelerator (or, for built-in GPUs and TPU VMs, its machine type) was written."""
    if pool.accelerator is not None:
        return written_at(native.data, pool.role, "accelerator", "type") or (pool.role,)
    return written_at(native.data, pool.role, "machine_type") or (pool.role,)
