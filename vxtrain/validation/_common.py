"""What the rule groups share: where a pool's key was written, scheduling as compiled, list wording,
the source-folder check (build.source and python_package.source),
shared sources.

The bottom of ``vxtrain.validation``: it imports no rule group.
"""
from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vxtrain import catalog
from vxtrain.diagnostics import Diagnostic, error, plural, warning
from vxtrain.loading.document import KeyPath, NativeSpec
from vxtrain.model import NO_DEFAULTS_ROLE, Job, Pool, parse_duration, written_at

if TYPE_CHECKING:
    from vxtrain.sources.folder import Survey

RS = NO_DEFAULTS_ROLE
DISTRIBUTED_DOC = "https://cloud.google.com/vertex-ai/docs/training/distributed-training"
#: Vertex AI training's machine types, GPUs and N1 GPU limits (the catalog's
#: training_*.csv and n1_gpu_limits.csv were read from it, 2026-11-23).
TRAINING_MACHINES_DOC = "https://cloud.google.com/vertex-ai/docs/training/configure-compute"


def raw_pool(native: NativeSpec, role: str) -> Mapping[str, Any]:
    """The pool ``role`` as written (without ``defaults``); empty when absent or not a mapping."""
    raw = native.data.get(role)
    return raw if isinstance(raw, Mapping) else {}


def key_path(native: NativeSpec, role: str, key: str) -> KeyPath:
    """Where a pool's ``key`` was written: in the pool, else in ``defaults``, else the pool."""
    return written_at(native.data, role, key) or (role,)


def quote_list(values: Iterable[object]) -> str:
    """``"a", "b"``."""
    return ", ".join(f'"{v}"' for v in values)


def or_list(values: Iterable[object]) -> str:
    """``"a" or "b"``."""
    return " or ".join(f'"{v}"' for v in values)


#: Links named in a source-links warning; the rest are counted.
LINKS_SHOWN = 5


def source_folder_checked(source: str, base: Path, key: str, code: str, into: str, native: NativeSpec,
                          path: KeyPath) -> Generator[Diagnostic, None, Path | None]:
    """Check a source folder (``key: source`` written at ``path``, relative to ``base``, packaged into ``into``):
    an error ``code`` when it is not a usable path or not a folder, an error of its own when
    it cannot be packaged (a system folder, past the bounds, an entry it cannot read: the
    SourceError's code), else warnings naming the links it leaves out and the files hard-linked
    from outside it. Returns the folder, None when it is not one (or cannot be packaged)."""
    # Imported here: only a spec with a source folder pays for the folder's walk (validate's
    # cold start, docs/performance.md).
    from vxtrain.sources.folder import SourceError, source_folder, survey

    try:
        folder = source_folder(base, source)
    except (ValueError, RuntimeError) as exc:  # a NUL byte; ``~user`` with no such user
        yield error(code, f"{key} {source!r} is not a usable path ({exc}); give the folder with the code, "
                    "relative to the spec", **native.where(path))
        return None
    try:
        is_dir, exists = folder.is_dir(), folder.exists()
    except OSError as exc:  # a name part past 255 bytes, a folder on the way that cannot be entered
        yield error(code, f"{key} {source!r} cannot be looked up ({exc.strerror or exc}); give the folder with "
                    "the code, relative to the spec", **native.where(path))
        return None
    if not is_dir:
        what = "is a file, not a folder" if exists else "does not exist"
        yield error(code, f"{key} {source!r} {what} (looked for {folder}); give the folder with the code, "
                    "relative to the spec", **native.where(path))
        return None
    try:
        found = survey(folder)
    except SourceError as exc:
        yield error(exc.code, f"{key} {source!r}: {exc}", **native.where(path))
        return None
    yield from _source_links(found, f"{key} {source!r}", into, native, path)
    return folder


def _source_links(found: Survey, key: str, into: str, native: NativeSpec, path: KeyPath) -> Iterator[Diagnostic]:
    """A warning naming the links under the source folder (written at ``key``) that are left
    out of ``into`` (the image, the package): outside the folder, to a directory, broken; and
    one naming the files it packages that are hard links of a name not found in the folder (outside it;
    or, when the search stopped short, perhaps in the part it did not see)."""
    from vxtrain.sources.folder import limits  # with the folder check above (cold start)

    if found.hard_links:
        shown = ", ".join(str(rel) for rel in found.hard_links[:LINKS_SHOWN])
        more = f" and {len(found.hard_links) - LINKS_SHOWN} more" if len(found.hard_links) > LINKS_SHOWN else ""
        where = ("another name outside the folder" if found.searched else
                 f"another name not found in the folder (the search for it stopped past {limits()[0]:,} names, or "
                 "at a folder it cannot list: the name may be outside, or in a left-out folder)")
        yield warning("source-hard-links", f"{key} has {plural(len(found.hard_links), 'file')} hard-linked to "
                      f"{where}, packaged into {into} as they are now: {shown}{more}; copy them "
                      "if the other name may change them", **native.where(path))
    links = found.links
    if not links:
        return
    shown = ", ".join(f"{link.path} -> {link.target} ({link.why})" for link in links[:LINKS_SHOWN])
    more = f" and {len(links) - LINKS_SHOWN} more" if len(links) > LINKS_SHOWN else ""
    yield warning("source-links", f"{key} has {plural(len(links), 'link')} left out of {into} (a link is followed "
                  f"only to a file of the folder that is packaged itself, not ignored nor under .git/, and a hard link of a "
                  f"name left out is left out too; a local run "
                  f"still sees them): {shown}{more}; copy what the job needs into the folder", **native.where(path))




#: ``scheduling``'s native keys → their Scheduling field in ``extra.jobSpec.scheduling``.
SCHEDULING_FIELDS: Mapping[str, str] = {"strategy": "strategy", "timeout": "timeout", "max_wait": "maxWaitDuration"}


def scheduling_value(job: Job, key: str) -> tuple[str | int | None, KeyPath]:
    """``scheduling.<key>`` as compiled (durations in seconds) and where it was written.

    Compile merges ``extra`` last, so ``extra.jobSpec.scheduling``'s field, when
    set, is the value sent (a value of the wrong type there is extra.py's to
    report: None here). Without either, the native key's path.
    """
    field = SCHEDULING_FIELDS[key]
    spec = job.extra.get("jobSpec")
    sched = spec.get("scheduling") if isinstance(spec, Mapping) else None
    if isinstance(sched, Mapping) and field in sched:
        raw = sched[field]
        value = (raw if isinstance(raw, str) else None) if key == "strategy" else parse_duration(raw)
        return value, ("extra", "jobSpec", "scheduling", field)
    native = getattr(job.scheduling, key) if job.scheduling is not None else None
    return native, ("scheduling", key)


def pool_accelerator(pool: Pool) -> tuple[str | None, int]:
    """The accelerator type and count of every node of ``pool``: as written, else the GPUs
    built into its machine type (gpu_machines.csv); ``(None, 0)`` without any."""
    acc = pool.accelerator
    if acc is not None and acc.type is not None:
        return acc.type, acc.count or 0
    return catalog.builtin_accelerator(pool.machine_type or "") or (None, 0)
