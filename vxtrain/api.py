"""The pipeline behind every command: load → detect → normalize → validate →
plan → compile, as plain functions over plain data.

Nothing here imports google.cloud.aiplatform: ``validate`` and ``plan`` stay
fast (see scripts/bench.py). Backends import it only when a command talks to
an API.
"""
from __future__ import annotations

import functools
import gc
import io
import json
import os
import re
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vxtrain import diagnostics as dx
from vxtrain.diagnostics import Diagnostic
from vxtrain.errors import InvalidArgumentError, NoCapacity, SpecError, UsageError
from vxtrain.loading.document import Document, NativeSpec, Position, spec_folder
from vxtrain.slots import POOL_INDEX

if TYPE_CHECKING:
    from vxtrain.backends.base import LocalRun
    from vxtrain.packaging.source import Source
    from vxtrain.packaging.upload import UploadProgress
    from vxtrain.runtime.gpus import GpuOptions


@dataclass
class Options:
    """What the shared CLI options say, as plain values."""

    overlays: Sequence[str | Path] = ()
    sets: Sequence[str] = ()
    variables: Mapping[str, str] = field(default_factory=dict)
    environ: Mapping[str, str] | None = None
    project: str | None = None
    region: str | None = None
    display_name: str | None = None
    strict: bool = False
    gradient_size: float | None = None
    staging_bucket: str | None = None
    image_repository: str | None = None  # where images built from ``build:`` go (--image-repository)
    #: gcloud's --package-path/--module-name for legacy configs (convert): python_package.source
    package_path: str | None = None
    module_name: str | None = None
    cost: bool = False  # price the job, warning about prices the catalog lacks (plan)
    max_hourly_cost: float | None = None  # USD: refuse a job whose cost per hour is above (or unknown)


@dataclass
class Result:
    """Everything known about one spec file after the pipeline ran."""

    file: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    document: Document | None = None
    native: NativeSpec | None = None
    job: Any = None  # vxtrain.model.Job
    plan: Any = None  # vxtrain.planning.bandwidth.Plan
    cost: Any = None  # vxtrain.planning.cost.Cost, when Options.cost or max_hourly_cost asked for it
    custom_job: dict[str, Any] | None = None
    hyperparameter_tuning_job: dict[str, Any] | None = None
    strict: bool = False
    #: python_package.source folders and their URIs (vxtrain.packaging.jobs.Package)
    packages: list[Any] = field(default_factory=list)
    #: The rungs of ``fallback:`` (1, 2, ...), each a Result of its own whole spec;
    #: their diagnostics are also in this one's (see ``_check_rungs``).
    fallback: list[Result] = field(default_factory=list)
    #: build: images and their URIs (vxtrain.images.recipe.ImageBuild)
    images: list[Any] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        """No errors (and, under --strict, no warnings)."""
        return not dx.has_errors(self.diagnostics, self.strict)

    def raise_for_errors(self) -> None:
        """Raise SpecError with the diagnostics when the spec is not valid."""
        if not self.valid:
            raise SpecError(self.diagnostics)


def _apply_overrides(native: NativeSpec, options: Options, environ: Mapping[str, str]) -> None:
    """Flags beat the spec, the spec beats the environment (README, "Keys"). A value
    that came from a flag or variable is located there, so a bad one is reported
    at ``--region`` (say), not at a line of the file that it replaced."""
    for key, flag, env in (("display_name", "--display-name", None),
                           ("project", "--project", "GOOGLE_CLOUD_PROJECT"),
                           ("region", "--region", "CLOUD_ML_REGION"),
                           ("staging_bucket", "--staging-bucket", None),
                           ("image_repository", "--image-repository", None)):
        value, origin = getattr(options, key), flag
        if not value and env and not native.data.get(key) and environ.get(env):
            value, origin = environ[env], f"${env}"
        if value:
            native.data[key] = value
            native.source.positions[native.source_path((key,))] = Position(origin, 1, 1)


def _load(path: str | Path, options: Options) -> tuple[Document | None, list[Diagnostic]]:
    from vxtrain.loading import load as load_document  # lazy: every command imports api at start-up; only the pipeline's commands need it

    environ = os.environ if options.environ is None else options.environ
    return load_document(path, overlays=options.overlays, sets=options.sets,
                         variables=options.variables, environ=environ)


def check_file(path: str | Path, options: Options | None = None, *, compile_job: bool = True) -> Result:
    """Run the whole pipeline on one file; never raises for bad input."""
    options = options or Options()
    document, diags = _load(path, options)
    result = Result(file=str(path), diagnostics=diags, document=document, strict=options.strict)
    if document is None:
        return _finish(result)
    return check_document(document, options, result, compile_job=compile_job)


def check_document(document: Document, options: Options | None = None, result: Result | None = None,
                   *, compile_job: bool = True) -> Result:
    """The pipeline from a loaded document on (normalize, validate, plan, compile)."""
    # Lazy, like _load's and _compile's: every CLI command imports this module at
    # start-up, and the pipeline (~60 ms of imports) is for the commands that read a spec.
    from vxtrain import formats
    from vxtrain.formats import package_flags

    options = options or Options()
    environ = os.environ if options.environ is None else options.environ
    result = result or Result(file=document.file, document=document, strict=options.strict)
    stem = Path(document.file).stem
    package = package_flags.from_flags(document, options.package_path, options.module_name)
    native, diags = formats.to_native(document, display_name=options.display_name or stem, package=package)
    result.diagnostics += diags
    result.native = native
    if native is None:
        return _finish(result)
    _apply_overrides(native, options, environ)
    described: dict[Path, Source] = {}  # source folders hashed (the rungs share the spec's)
    _check_native(native, options, result, described, compile_job=compile_job)
    _check_rungs(native, options, result, described, compile_job=compile_job)
    return _finish(result)


def _check_native(native: NativeSpec, options: Options, result: Result, described: dict[Path, Source], *,
                  compile_job: bool) -> None:
    """Validate, plan and (when valid) compile one whole spec into ``result`` (``described``:
    the source folders hashed so far in this check)."""
    # lazy, like check_document's: the pipeline's modules load only for the commands that read a spec
    from vxtrain.planning import bandwidth as planning
    from vxtrain import model
    from vxtrain.validation import rules
    from vxtrain.validation import schema

    result.diagnostics += schema.check(native)
    job = model.build(native.data)
    result.job = job
    result.diagnostics += rules.check(job, native)
    bandwidth = planning.plan(job, native, gradient_bytes=options.gradient_size)
    result.plan = bandwidth
    result.diagnostics += bandwidth.diagnostics
    if compile_job and not dx.has_errors(result.diagnostics):
        _compile(result, described)
        _price(result, options)


def _check_rungs(native: NativeSpec, options: Options, result: Result, described: dict[Path, Source], *,
                 compile_job: bool) -> None:
    """Each rung of ``fallback:`` checked as a whole job (vxtrain.loading.fallback).

    A rung's diagnostics join the spec's, except those rung 0 already has at the same
    place (a rung that inherits a mistake does not repeat it: fix it once, in the spec).
    One located outside the rung's own entry (a key it inherits, made wrong by what the
    rung changed) says which rung in its message.
    """
    from vxtrain.loading.fallback import rungs  # lazy: as in check_document

    seen = {_place(d) for d in result.diagnostics}
    for rung in rungs(native):
        own = Result(file=result.file, document=result.document, native=rung.spec, strict=result.strict)
        _check_native(rung.spec, options, own, described, compile_job=compile_job)
        entry = rung.spec.where(rung.entry)["path"]
        own.diagnostics = [d if _inside(d.path, entry) else _in_rung(d, entry, rung.number)
                           for d in own.diagnostics if _place(d) not in seen]
        result.diagnostics += own.diagnostics
        result.fallback.append(own)
    if any(dx.has_errors(rung.diagnostics) for rung in result.fallback):
        # A bad rung makes the whole spec invalid: no job to send, not even rung 0's.
        result.custom_job = result.hyperparameter_tuning_job = None


def _inside(path: str, entry: str) -> bool:
    """Whether the key path ``path`` is ``entry`` or under it (``fallback[1]`` is not under ``fallback[10]``)."""
    return path == entry or path.startswith((f"{entry}.", f"{entry}["))


def _place(d: Diagnostic) -> tuple[object, ...]:
    """What makes two diagnostics the same finding: its code and where it points."""
    return d.code, d.file, d.path, d.line, d.column


def _in_rung(d: Diagnostic, entry: str, number: int) -> Diagnostic:
    """``d`` (about a key the rung inherits) with the rung named in its message."""
    return replace(d, message=f"in fallback rung {number} ({entry} merged over the spec): {d.message}")


def _compile(result: Result, described: dict[Path, Source]) -> None:
    # lazy: every command imports api at start-up; only the pipeline's commands need these
    from vxtrain import compiler
    from vxtrain.planning.bandwidth import resolve

    job = resolve(result.job, result.plan)
    result.job = job
    if any(p.python_package is not None and p.python_package.source for p in job.pools.values()):
        from vxtrain.packaging import jobs  # lazy: only specs with python_package.source need it

        assert result.native is not None
        # Hashing reads files, so it happens here and the compiler stays pure: it
        # only sees the content-addressed URI in package_uris.
        result.packages = jobs.resolve(job, result.native.source.folder, job.staging_bucket, described)
    if any(p.build is not None for p in job.pools.values()):
        from vxtrain.images import recipe  # lazy: only specs with build: need it

        assert result.native is not None
        # As for packages: hashing reads files, so the compiler only sees the URI in image.
        result.images = recipe.resolve(job, result.native.source.folder, job.image_repository, described)
    result.custom_job = compiler.compile_custom_job(job)
    if job.study is not None:
        result.hyperparameter_tuning_job = compiler.compile_hpt_job(job)


def _price(result: Result, options: Options) -> None:
    """The cost plan of the compiled job, its warnings, and the --max-hourly-cost guardrail."""
    if not options.cost and options.max_hourly_cost is None:
        return  # validate stays free of price warnings (and of the price catalog)
    from vxtrain.planning import cost  # lazy: the price catalog is read only when a cost is asked for

    result.cost = cost.plan(result.job)
    if options.cost:
        result.diagnostics += cost.diagnostics(result.cost, result.native)
    if options.max_hourly_cost is not None:
        refused = cost.over_limit(result.cost, options.max_hourly_cost)
        result.diagnostics += [refused] if refused is not None else []


def _finish(result: Result) -> Result:
    result.diagnostics = sorted((d.with_file(result.file) for d in result.diagnostics),
                                key=dx.sort_key)
    return result


# Folders a recursive validate never enters: `vxtrain validate .` in a project must not
# check the YAML of its tools (.git, .github workflows, .pre-commit-config.yaml), of
# its virtual envs (site-packages ship YAML) or of node_modules. Named paths are
# always checked, hidden or not.
_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})
_VENV_MARKER = "pyvenv.cfg"


def spec_files(paths: Sequence[str | Path]) -> list[Path]:
    """Files named, and *.yaml / *.yml under folders named (recursively, sorted),
    leaving out hidden files and folders, virtual envs and node_modules."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        out += _sorted(p, _walk_specs(p)) if p.is_dir() else [p]
    return out


def _sorted(root: Path, rels: list[str]) -> list[Path]:
    """``root / rel`` for each of ``rels``, in the order of the Paths."""
    if os.sep == "/":  # POSIX Paths compare part by part, case and all: the same order, ~10x faster
        return [root / rel for rel in sorted(rels, key=lambda rel: rel.split("/"))]
    return sorted(root / rel for rel in rels)


def _walk_specs(root: Path) -> list[str]:
    """Spec files under ``root`` as paths relative to it (bulk validation walks
    thousands: plain strings and scandir's entries, no stat per file)."""
    found: list[str] = []
    todo = [""]
    while todo:
        rel = todo.pop()
        try:
            with os.scandir(root / rel if rel else root) as entries:  # symlinked folders not followed
                for entry in entries:
                    name = entry.name
                    if entry.is_dir():
                        if not entry.is_symlink() and not _skipped_dir(Path(entry.path)):
                            todo.append(f"{rel}/{name}" if rel else name)
                    elif not name.startswith(".") and name.endswith((".yaml", ".yml")) and entry.is_file():
                        found.append(f"{rel}/{name}" if rel else name)
        except OSError:
            continue  # like os.walk: a folder that cannot be listed is left out
    return found


def _skipped_dir(path: Path) -> bool:
    return path.name.startswith(".") or path.name in _SKIPPED_DIRS or (path / _VENV_MARKER).is_file()


def validate(paths: Sequence[str | Path], options: Options | None = None) -> list[Result]:
    """Check (and compile) every spec under ``paths``; one Result per file with its
    diagnostics, in input order, never raising for bad input.

    The Results keep only ``file`` and ``diagnostics``: holding every document,
    model and compiled job of a large tree alive makes Python's garbage
    collector walk them all again and again (bulk validation ran ~2x slower).
    Use ``check_file`` or ``plan`` for the compiled job of a file.

    A large batch is spread over worker processes on a multi-core machine
    (``_parallel``); the results are the same, in the same order.
    """
    files = spec_files(paths)
    options = options or Options()
    workers = _workers(len(files))
    if workers > 1:
        return _parallel(files, options, workers)
    return [_check_slim(p, options) for p in files]


#: Below this many files per worker, forking costs more than it saves.
_FILES_PER_WORKER = 100


def _workers(files: int) -> int:
    """How many processes to check ``files`` files with (1: this one alone).

    Only where ``fork`` exists and this process runs no other thread: a fork
    copies the interpreter as it is (every import already done), where a
    spawned worker would pay the start-up again; forking a threaded process is
    unsafe.
    """
    if files < 2 * _FILES_PER_WORKER or threading.active_count() > 1 or not hasattr(os, "fork"):
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cpus, 8, files // _FILES_PER_WORKER))


def _parallel(files: Sequence[Path], options: Options, workers: int) -> list[Result]:
    """``_check_slim`` over ``files`` in ``workers`` processes (this one and forked
    children), in input order.

    The first file is checked here, before the fork: its lazy imports and
    caches (the pipeline's modules, the compiled schema) are then made once,
    not once per process; ``gc.freeze`` keeps the collector from touching (and
    so copying) the inherited objects in every child. Process k checks files
    k+1, k+1+workers, ...: interleaved, so a folder's big and small specs spread
    evenly. Plain ``os.fork`` and a pipe per child, not a multiprocessing.Pool:
    the Pool's import, queues and threads cost ~25 ms, an eighth of a 1,000-spec
    batch, and this process would only wait while its workers ran.
    """
    first = _check_slim(files[0], options)
    gc.freeze()
    children: list[tuple[int, int]] = []  # (pid, pipe) of those not yet collected
    try:
        for k in range(1, workers):
            children.append(_fork_share(files, options, k, workers))
        shares = [[_check_slim(files[i], options) for i in range(1, len(files), workers)]]
        while children:
            kind, value = _collect(*children[0])
            children.pop(0)  # reaped: never to be signalled again
            if kind == "raised":
                raise value
            shares.append(value)
    finally:
        gc.unfreeze()
        _stop(children)
    # files[j] (j >= 1) is item (j - 1) // workers of share (j - 1) % workers
    return [first] + [shares[(j - 1) % workers][(j - 1) // workers] for j in range(1, len(files))]


def _fork_share(files: Sequence[Path], options: Options, k: int, workers: int) -> tuple[int, int]:
    """A child checking share ``k`` of ``files``: its pid and the pipe its results come
    back on, pickled (an exception it raised comes back instead, to be raised here)."""
    import pickle  # lazy: only large batches need it

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write_fd)
        return pid, read_fd
    code = 1
    try:  # the child: never returns into the caller, whatever happens
        os.close(read_fd)
        try:
            payload: Any = ("ok", [_check_slim(files[i], options) for i in range(1 + k, len(files), workers)])
        except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
            payload = ("raised", exc)
        try:
            data = pickle.dumps(payload, pickle.HIGHEST_PROTOCOL)
        except Exception:  # an exception that does not pickle: its words do
            data = pickle.dumps(("raised", RuntimeError(repr(payload[1]))), pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_fd, "wb") as out:
            out.write(data)
        code = 0
    finally:
        os._exit(code)


def _collect(pid: int, read_fd: int) -> tuple[str, Any]:
    """What the child ``pid`` sent (read to the end of its pipe), once it has ended:
    ``("ok", its results)`` or ``("raised", its exception)``."""
    import pickle  # lazy: as in _fork_share

    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    if not data:
        return "raised", RuntimeError(f"a bulk-validation worker process (pid {pid}) ended without its results")
    kind, value = pickle.loads(data)
    return kind, value


def _stop(children: list[tuple[int, int]]) -> None:
    """End and reap the children not yet collected (this process was interrupted or raised)."""
    import signal  # lazy: only an interrupted batch needs it

    for pid, read_fd in children:
        try:
            os.close(read_fd)
        except OSError:
            pass  # closed by the read that was interrupted
        try:
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
        except OSError:
            pass  # already gone


def _check_slim(path: Path, options: Options) -> Result:
    return _slim(check_file(path, options, compile_job=True))


def _slim(result: Result) -> Result:
    return Result(file=result.file, diagnostics=result.diagnostics, strict=result.strict)


def load_job(path: str | Path, options: Options | None = None) -> Result:
    """The compiled job of one valid spec; raises SpecError when it is not valid."""
    result = check_file(path, options)
    result.raise_for_errors()
    return result


def plan(path: str | Path, options: Options | None = None) -> Result:
    """What ``vxtrain plan`` shows: ``.custom_job``, the bandwidth ``.plan`` and the
    ``.cost`` plan; raises SpecError."""
    return load_job(path, replace(options or Options(), cost=True))


def load(path: str | Path, options: Options | None = None) -> Document:
    """The loaded document (overlays, --set and ${VAR} applied); raises SpecError."""
    document, diags = _load(path, options or Options())
    if document is None or dx.has_errors(diags):
        raise SpecError([d.with_file(str(path)) for d in diags])
    return document


def compile_job(path: str | Path, options: Options | None = None) -> dict[str, Any]:
    """The CustomJob (REST JSON, camelCase) of a valid spec; raises SpecError."""
    result = load_job(path, options)
    assert result.custom_job is not None  # a valid result is compiled
    return result.custom_job


def submit(path: str | Path, options: Options | None = None, *, target: str = "vertex",
           endpoint: str | None = None, idempotency_key: str | None = None, wait: bool = False,
           progress: Any = None, logs: Any = None, say: Any = None,
           upload_progress: UploadProgress | None = None, until_running: bool = False,
           max_pending: float | None = None, quota_check: bool = True,
           gpus: GpuOptions | None = None) -> dict[str, Any]:
    """Create the spec's job exactly once (vxtrain.submission) and return its view, with
    ``attempts``: what each rung of the spec's ``fallback:`` ladder came to
    (vxtrain.submission.ladder; a spec without one is a ladder of one rung).

    ``target``: "vertex" (the regional endpoint, or ``endpoint`` HOST:PORT of an
    emulator) or "local" (an in-process emulator running the job here, always
    followed to the end). ``logs``: while following, a callable that gets the job's
    new log lines (lists of vxtrain.joblogs.Entry) as they arrive. ``say``: where
    retries and notices go, one line at a time (default: the ``vxtrain`` logger).
    ``upload_progress``: watches each large python_package.source upload
    (vxtrain.packaging.upload.UploadProgress; the CLI's draws a bar).
    ``until_running``: without ``wait``, follow the job until it is RUNNING (so a
    stockout before start moves the ladder on). ``max_pending``: seconds a followed job
    may stay QUEUED/PENDING before it is cancelled and the next rung tried.
    ``quota_check``: set each rung's needs against the project's quota limits before its
    create (vxtrain.submission.quota); a need above a limit moves the ladder on with
    nothing created. ``gpus``: how a ``local`` run hands out this host's GPUs
    (vxtrain.runtime.gpus). Raises SpecError, UsageError, ApiError, GpuShortageError
    (``local``, before the job is created), JobFailedError when a followed job fails,
    and NoCapacity when every rung ran out of capacity (a spec without ``fallback:``:
    when the quota preflight found a need above a limit, nothing created).
    """
    from vxtrain import submission  # lazy: validate and plan never load submission or a backend
    from vxtrain.submission import ladder as ladders

    if target == "local" and endpoint:
        raise UsageError("--target local starts its own emulator; drop --endpoint (or --target local)")
    if target != "local" and gpus is not None:
        raise UsageError("--gpus, --share-gpus and --no-gpus are for local runs: add --target local, or drop them")
    result = load_job(path, options)
    local_target = target == "local"
    say = say or submission.log_say
    follow = ladders.Follow.end if wait or local_target else (
        ladders.Follow.until_running if until_running else ladders.Follow.none)
    ladder = ladders.Ladder(key=idempotency_key or uuid.uuid4().hex, explicit=idempotency_key is not None,
                            follow=follow, max_pending=max_pending, endpoint=endpoint, progress=progress,
                            logs=logs, say=say, quota_check=quota_check)
    try:
        if local_target:
            return _submit_local(result, ladder, gpus)
        local = endpoint is not None  # an emulator runs it here
        pushed: list[Any] = []
        view = ladders.climb(_rungs(result, local=local, say=say, upload_progress=upload_progress,
                                    pushed=pushed), ladder)
        if any(each.images for each in (result, *result.fallback)):  # build: what was pushed
            view["images"] = [entry for p in pushed for entry in p.to_json()]
        return view
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"{exc}{_spec_location(result, str(exc))}") from exc
    except NoCapacity as exc:
        if exc.report is None:  # the ladder ran out: its attempts say where
            raise
        # the quota preflight of a spec without fallback: point at the first pool that needs it
        raise NoCapacity(f"{exc}{_spec_location(result, str(exc))}", exc.report, exc.attempts) from exc


def quota(path: str | Path, options: Options | None = None, *, endpoint: str | None = None,
          say: Any = None) -> Any:
    """The spec's quota needs against the project's limits in its region (Cloud Quotas API, or
    the emulator at ``endpoint``): a vxtrain.submission.QuotaReport, with one report per rung of
    ``fallback:`` in its ``fallback``. A refused read is said through ``say`` and leaves the
    limits unknown. Raises SpecError and UsageError."""
    from vxtrain import submission  # lazy: validate and plan never load submission or a backend
    from vxtrain.backends import open_backend

    result = load_job(path, options)
    reads: dict[str, Any] = {}  # one read of the limits per project, for every rung
    reports = []
    for _, each, job, project, region in _rung_targets(result, local=endpoint is not None):
        with open_backend(region=region, endpoint=endpoint) as backend:
            reports.append(submission.preflight(backend, job, project=project, region=region,
                                                say=say or submission.log_say, reads=reads))
    return replace(reports[0], fallback=tuple(reports[1:]))


def _rungs(result: Result, *, local: bool, say: Any, upload_progress: UploadProgress | None,
           local_packages: bool = False, pushed: list[Any] | None = None) -> list[Any]:
    """The ladder's rungs (vxtrain.submission.ladder.Rung): the spec, then each ``fallback:``
    entry, each with its own project, region, compiled job, images and packages (``pushed``
    gets each image a rung pushes: vxtrain.images.publish.Pushed)."""
    from vxtrain.submission.ladder import Rung  # lazy: as in submit()

    rungs = []
    for number, each, job, project, region in _rung_targets(result, local=local):
        if local_packages:
            job = _local_packages(job, each.packages)
        # Packages and images are pushed only once a job is to be created, after the checks
        # that can still refuse it (a persistent resource it does not fit, the quota):
        # nothing is pushed for a job that is not created, nor for a re-submit that adopts
        # its job. Local runs run the sources in place: nothing is built.
        publish = None if local_packages else functools.partial(
            _publish, each, project, say, upload_progress, [] if pushed is None else pushed)
        rungs.append(Rung(number, project, region, job, local=_local_run(each) if local else None,
                          before_create=publish))
    return rungs


def _rung_targets(result: Result, *, local: bool) -> Iterator[tuple[int, Result, dict[str, Any], str, str]]:
    """The spec, then each rung of its ``fallback:``, in the order submit climbs them: (rung
    number, its result, its compiled job (REST JSON), its project, its region)."""
    for number, each in enumerate([result, *result.fallback]):
        job = each.hyperparameter_tuning_job or each.custom_job
        assert job is not None  # a valid result is compiled, every rung of it
        project, region = _project_region(each, local=local)
        yield number, each, job, project, region


def _publish(result: Result, project: str, say: Any, progress: UploadProgress | None,
             pushed: list[Any]) -> None:
    """Build and push the job's images, then its source packages, where they are missing
    (``pushed`` gets each image's vxtrain.images.publish.Pushed)."""
    if result.images:
        _push_images(result, say, progress, pushed)
    if not result.packages:
        return
    from vxtrain.packaging import jobs  # lazy: as in submit()

    if any(p.uri.startswith(jobs.UNSET_BUCKET) for p in result.packages):
        assert result.native is not None
        roles = result.packages[0].roles
        raise SpecError([dx.error(
            "no-staging-bucket", "python_package.source must be uploaded before the job is created, and no "
            "staging bucket is set: pass --staging-bucket gs://BUCKET[/PREFIX] or set staging_bucket: in the spec",
            **result.native.where(_pool_key(result.native, roles[0], "python_package", "source")))])
    jobs.publish(result.packages, project, say=say, progress=progress)


def _push_images(result: Result, say: Any, progress: UploadProgress | None, pushed: list[Any]) -> None:
    """Build and push every build: image whose tag is not in its repository (a missing
    image_repository is refused first, at the key that needs it)."""
    from vxtrain.images import recipe  # lazy: only specs with build: need it
    from vxtrain.images.publish import publish  # lazy: requests and dxf, for a submit that pushes only

    if any(i.repository.startswith(recipe.UNSET_REPOSITORY) for i in result.images):
        assert result.native is not None
        raise SpecError([dx.error(
            "no-image-repository", "build: images must be pushed before the job is created, and no image "
            "repository is set: pass --image-repository HOST/PATH (e.g. us-central1-docker.pkg.dev/PROJECT/REPO) "
            "or set image_repository: in the spec",
            **result.native.where(_pool_key(result.native, result.images[0].roles[0], "build")))])
    pushed += publish(result.images, say=say, progress=progress)


def _pool_key(native: NativeSpec, role: str, *keys: str) -> tuple[str | int, ...]:
    """Where pool ``role``'s key ``keys`` was written (the pool, else ``defaults``)."""
    from vxtrain.model import key_path_of  # lazy: the pipeline's modules load only for commands that read a spec

    return key_path_of(native.data, role, *keys)


def _local_packages(job: dict[str, Any], packages: list[Any]) -> dict[str, Any]:
    """The job with each source package's URI replaced by its folder: local runs use DIR as it is."""
    if not packages:
        return job
    from vxtrain.packaging.source import import_root  # lazy: only local runs of source packages

    text = json.dumps(job)
    for p in packages:
        text = text.replace(json.dumps(p.uri), json.dumps(str(import_root(p.source.path, p.module))))
    return json.loads(text)  # type: ignore[no-any-return]


def logs(name: str, *, endpoint: str | None = None, replica: str | None = None,
         since: str | None = None) -> list[dict[str, str]]:
    """The log lines of the job ``name`` (a full resource name), oldest first, as
    ``{"replica", "timestamp", "severity", "text"}``: from Cloud Logging, or from the
    emulator at ``endpoint``. ``replica``: ``workerpoolK-I``; ``since``: a duration
    back (``10m``) or an RFC 3339 time."""
    from vxtrain import submission  # lazy: as in submit()
    from vxtrain.joblogs import parse_since

    start = parse_since(since) if since else None
    return [e.to_json() for e in submission.read_logs(name, endpoint=endpoint, replica=replica, since=start)]


def _project_region(result: Result, *, local: bool) -> tuple[str, str]:
    """Project and region (flag > spec > env, applied by the pipeline); defaults locally."""
    from vxtrain.submission import LOCAL_PROJECT, LOCAL_REGION  # lazy: as in submit()

    project, region = result.job.project, result.job.region
    if local:
        return project or LOCAL_PROJECT, region or LOCAL_REGION
    missing = [what for what, value in (("project", project), ("region", region)) if not value]
    if missing:
        raise UsageError(
            f"no {' and no '.join(missing)} to submit to: pass --project/--region, set project:/region: "
            f"in the spec, or export GOOGLE_CLOUD_PROJECT/CLOUD_ML_REGION (or use --target local)")
    return str(project), str(region)


_POOL_IN_MESSAGE = re.compile(r"(?:worker_pool_specs|workerPoolSpecs)\[(\d+)\]")


def _spec_location(result: Result, message: str) -> str:
    """`` (at FILE:LINE:COL, key ROLE)`` for the pool a server message names, else ``""``."""
    found = _POOL_IN_MESSAGE.search(message)
    native = result.native
    if not found or native is None:
        return ""
    index = int(found.group(1))
    roles = [r for r, i in POOL_INDEX.items() if i == index and r in native.data]
    if not roles:
        return ""
    at = native.where((roles[0],))
    return f" (at {at['file']}:{at['line']}:{at['column']}, key {at['path']})"


class _Discard(io.StringIO):
    """A text stream that keeps nothing."""

    def write(self, text: str) -> int:
        return len(text)


def _submit_local(result: Result, ladder: Any, gpus: GpuOptions | None) -> dict[str, Any]:
    """An in-process emulator running the job with the local runner, followed to the end.
    With ``logs``, the job's lines reach it through the emulator's Logging service
    only (as on Vertex AI), not also straight from the replicas. The job is checked
    against this host's GPUs first: too few, and nothing is created (GpuShortageError)."""
    from vxtrain.backends import open_backend  # lazy: as in submit()
    from vxtrain.runtime.gpus import GpuOptions, resolve
    from vxtrain.submission.ladder import climb

    gpus = gpus or GpuOptions()
    resolve(result.job, gpus)  # the emulator hands out the same GPUs: refuse here, before a create
    local = _local_run(result)
    with open_backend("local", workdir=local.base_dir, gpus=gpus,
                      job_output=_Discard() if ladder.logs is not None else None) as backend:
        ladder.backend = backend
        return climb(_rungs(result, local=True, say=ladder.say, upload_progress=None, local_packages=True), ladder)


def _local_run(result: Result) -> LocalRun:
    """How an emulator runs the spec's job on its host: the ``local:`` block and the spec's
    folder (the CustomJob carries neither; see vxtrain.backends.base.LocalRun)."""
    from vxtrain.backends.base import LocalRun  # lazy: validate and plan never load the backends
    from vxtrain.model import LocalSpec  # lazy: the pipeline's modules load only for commands that read a spec

    local = result.job.local
    if result.images:  # build: images run locally as their source folder, in place (nothing is built)
        local = replace(local or LocalSpec(), image_sources={i.uri: str(i.source.path) for i in result.images})
    return LocalRun(local, str(spec_folder(result.file)))
