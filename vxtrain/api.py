"""The Python API: the verbs of the command line, over plain values.

``validate``, ``plan``, ``compile_job``, ``load`` and ``load_job`` run the check
pipeline (vxtrain.pipeline; many files at once through vxtrain.bulk); ``submit`` and
``quota`` make a checked spec into its plan (vxtrain.jobplan) and hand it to
vxtrain.submission; ``logs`` reads a job's lines; ``local_run`` runs a job's replicas
as processes here (vxtrain.runtime).

Nothing here imports google.cloud.aiplatform, and ``validate`` and ``plan`` never load
submission, the backends or the runtime: their imports wait in the verbs that need them
(see scripts/bench.py for the start-up budget).
"""
from __future__ import annotations

import functools
import io
import os
import shlex
import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from vxtrain import bulk
from vxtrain.diagnostics import Diagnostic
from vxtrain.errors import BuildKeyError, InvalidArgumentError, NoCapacity, SpecError, UsageError, VxtrainError
from vxtrain.loading.document import spec_folder
from vxtrain.options import Options
from vxtrain.pipeline import Result, check_file, load, load_job
from vxtrain.vocab.kinds import job_spec_of
from vxtrain.vocab.studies import trial_args

if TYPE_CHECKING:
    from vxtrain.joblogs import LogSink
    from vxtrain.packaging.upload import UploadProgress
    from vxtrain.runtime.gpus import GpuOptions
    from vxtrain.runtime.runner import LocalRunResult
    from vxtrain.runtime.study import StudyResult
    from vxtrain.submission import Hooks, Session
    from vxtrain.submission.events import ProgressFn
    from vxtrain.submission.ledger import CostReport, Ledger, Query
    from vxtrain.submission.quota import QuotaReport, Read
    from vxtrain.submission.reconcile import PassJson
    from vxtrain.submission.views import JobViewJson

__all__ = ["Options", "Result", "check_file", "compile_job", "cost", "jobs", "load", "load_job", "local_run",
           "logs", "plan", "quota", "reconcile", "spec_regions", "submit", "validate"]


def validate(paths: Sequence[str | Path], options: Options | None = None) -> list[Result]:
    """Check (and compile) every spec under ``paths`` (files, and *.yaml / *.yml under
    folders: vxtrain.bulk.spec_files); one Result per file with its diagnostics, in input
    order, never raising for bad input; a folder under them that cannot be listed is a
    Result of its own, with its ``folder-unreadable`` error. The Results keep only ``file``
    and ``diagnostics``: use ``check_file`` or ``plan`` for the compiled job of a file."""
    return bulk.check_all(bulk.found(paths), options or Options())


def plan(path: str | Path, options: Options | None = None) -> Result:
    """What ``vxtrain plan`` shows: ``.custom_job``, the bandwidth ``.plan`` and the
    ``.cost`` plan; raises SpecError."""
    return load_job(path, replace(options or Options(), cost=True))


def compile_job(path: str | Path, options: Options | None = None) -> dict[str, Any]:
    """The CustomJob (REST JSON, camelCase) of a valid spec; raises SpecError."""
    result = load_job(path, options)
    assert result.custom_job is not None  # a valid result is compiled
    return result.custom_job


def submit(path: str | Path, options: Options | None = None, *, target: str = "vertex",
           endpoint: str | None = None, idempotency_key: str | None = None, wait: bool = False,
           progress: ProgressFn | None = None, logs: LogSink | None = None,
           upload_progress: UploadProgress | None = None, until_running: bool = False,
           max_pending: float | None = None, quota_check: bool = True,
           gpus: GpuOptions | None = None, notify: Sequence[str] = (),
           warnings: Callable[[Sequence[Diagnostic]], None] | None = None) -> JobViewJson:
    """Create the spec's job exactly once (vxtrain.submission) and return its view, with
    ``attempts``: what each rung of the spec's ``fallback:`` ladder came to (a spec without
    one is a ladder of one rung), and ``images`` when the spec builds images: what was pushed.

    ``target``: "vertex" (the regional endpoint, or ``endpoint`` HOST:PORT of an
    emulator) or "local" (an in-process emulator running the job here, always
    followed to the end). ``progress``: while following, each poll's view
    (vxtrain.submission.JobView) and the seconds since following began; ``logs``: the job's
    new log lines (lists of vxtrain.joblogs.Entry) as they arrive. vxtrain's own lines
    (retries, notices) go to the ``vxtrain.submission`` logger.
    ``upload_progress``: watches each large python_package.source upload
    (vxtrain.packaging.upload.UploadProgress; the CLI's draws a bar).
    ``until_running``: without ``wait``, follow the job until it is RUNNING (so a
    stockout before start moves the ladder on). ``max_pending``: seconds a followed job
    may stay QUEUED/PENDING (from its create time) before it is cancelled and the next rung tried.
    ``quota_check``: set each rung's needs against the project's quota limits before its
    create (vxtrain.submission.quota); a need above a limit moves the ladder on with
    nothing created. ``gpus``: how a ``local`` run hands out this host's GPUs
    (vxtrain.runtime.gpus). Raises SpecError, UsageError, ApiError, GpuShortageError
    (``local``, before the job is created), JobFailedError when a followed job fails,
    and NoCapacity when every rung ran out of capacity (a spec without ``fallback:``:
    when the quota preflight found a need above a limit, nothing created).

    With ``recovery:`` in the spec, a followed job that loses its machines after it
    started gets a new attempt (vxtrain.submission.decide), and the view has
    ``recoveries`` and ``cost`` (a followed job's has them in any case); when the
    recoveries are spent: NoCapacity after a capacity loss, else JobFailedError.
    ``notify``: http(s) URLs (beside the spec's ``notify:``) that get one JSON object per
    event while the job is followed (vxtrain.submission.notify).

    The spec's warnings (what ``validate`` prints) are given to ``warnings`` once the spec
    is checked, before anything is pushed or created (without it: to the ``vxtrain.submission``
    logger, one ``FILE:LINE:COL: warning: …`` line each), and are the view's ``diagnostics``. A ``build:``
    base whose own config or files do not confirm the image's Python raises SpecError at
    the spec's ``build.python`` (or ``build.base``) line (vxtrain.images.publish.check_python).
    """
    # lazy: vxtrain.submission (and jobplan, over it) cost ~130 ms of imports (-X importtime),
    # more than half of validate's start-up; validate and plan never need them
    from vxtrain.submission import Hooks
    from vxtrain.submission.events import LOGGER
    from vxtrain.submission.notify import check_url

    _check_urls(notify, check_url)
    if target == "local" and endpoint:
        raise UsageError("--target local starts its own emulator; drop --endpoint (or --target local)")
    if target != "local" and gpus is not None:
        raise UsageError("--gpus, --share-gpus and --no-gpus are for local runs: add --target local, or drop them")
    result = load_job(path, options)
    said = [d for d in result.diagnostics if d.severity == "warning"]
    if warnings is not None:
        warnings(said)
    else:
        for diagnostic in said:
            LOGGER.warning("%s", diagnostic.render())
    send = _Send(result, idempotency_key, notify, wait=wait or target == "local", until_running=until_running,
                 max_pending=max_pending, quota_check=quota_check)
    send.command = _command(path, options or Options(), endpoint)
    view = _submit(send, target, endpoint, Hooks(progress, logs, upload_progress), gpus)
    return {**view, "diagnostics": [d.to_json() for d in said]}


def _submit(send: _Send, target: str, endpoint: str | None, hooks: Hooks, gpus: GpuOptions | None) -> JobViewJson:
    """submit() past the checks: the life of the spec's plan, carried as asked."""
    # lazy: as in submit()
    from vxtrain import jobplan
    from vxtrain.submission import Session

    result = send.result
    try:
        if target == "local":
            return _submit_local(result, send, hooks, gpus)
        with Session(endpoint=endpoint, hooks=hooks) as session:
            return send.carry(session, emulated=endpoint is not None)
    except BuildKeyError as exc:  # the base's Python or platform, found at push time: at the spec's line
        raise SpecError([_located(result, exc, d) for d in exc.diagnostics]) from exc
    except InvalidArgumentError as exc:  # reworded: its class and the ladder's attempts kept
        raise exc.reworded(f"{exc}{jobplan.spec_location(result, str(exc))}") from exc
    except NoCapacity as exc:
        if exc.report is None:  # the ladder ran out: its attempts say where
            raise
        # the quota preflight of a spec without fallback: point at the first pool that needs it
        raise exc.reworded(f"{exc}{jobplan.spec_location(result, str(exc))}") from exc


def _located(result: Result, exc: BuildKeyError, diagnostic: Diagnostic) -> Diagnostic:
    """``diagnostic`` (about pool ``exc.role``'s ``build.KEY``) at that key's place in the spec
    (written in the pool, else in ``defaults``)."""
    from vxtrain import jobplan  # lazy: as in submit()

    where = jobplan.where(result, exc.role, "build", exc.key)
    return replace(diagnostic, path=str(where["path"]), line=where["line"], column=where["column"],
                   file=where.get("file") or diagnostic.file)


def _check_urls(urls: Sequence[str], check: Callable[[str], str | None]) -> None:
    """``--notify`` takes http(s) URLs with a host (``check``: vxtrain.submission.notify.check_url;
    the spec's ``notify:`` is validated with the spec): anything else is refused before a create."""
    for url in urls:
        problem = check(url)
        if problem is not None:
            raise UsageError(f"--notify: {problem}")


def _command(path: str | Path, options: Options, endpoint: str | None) -> str:
    """``vxtrain submit PATH`` with every option that shapes the job (and the endpoint), as a
    resume line repeats them: a re-run with the key must send the same job."""
    flags: list[str] = [str(path)]
    flags += [arg for overlay in options.overlays for arg in ("-f", str(overlay))]
    flags += [arg for value in options.sets for arg in ("--set", value)]
    flags += [arg for name, value in options.variables.items() for arg in ("--var", f"{name}={value}")]
    for flag, value in (("--project", options.project), ("--region", options.region),
                        ("--display-name", options.display_name), ("--staging-bucket", options.staging_bucket),
                        ("--image-repository", options.image_repository), ("--endpoint", endpoint)):
        if value:
            flags += [flag, value]
    return " ".join(["vxtrain", "submit", *map(shlex.quote, flags)])


class _Send:
    """One submit of a checked spec: its key, how far it follows, its notification hooks."""

    def __init__(self, result: Result, key: str | None, notify: Sequence[str], *, wait: bool, until_running: bool,
                 max_pending: float | None, quota_check: bool) -> None:
        # lazy: as in submit()
        from vxtrain.submission.decide import Follow, Watch
        from vxtrain.submission.events import LOGGER
        from vxtrain.submission.notify import Hook, hooks_from_env

        assert result.job is not None  # a valid result has its model
        self.result, self.key = result, key or uuid.uuid4().hex
        follow = Follow.end if wait else Follow.until_running if until_running else Follow.none
        self.watch = Watch(follow, max_pending, explicit=key is not None)

        literal = list(dict.fromkeys([*result.job.notify, *notify]))
        self.unkept = len(literal)
        self.hooks: list[str | Hook] = [*literal, *hooks_from_env(result.job.notify_env, LOGGER)]
        self.quota_check = quota_check
        self.command = "vxtrain submit SPEC"

    def carry(self, session: Session, *, emulated: bool, in_place: bool = False) -> JobViewJson:
        """The spec's life carried through ``session`` (vxtrain.submission.carry)."""
        # lazy: as in submit()
        from vxtrain import jobplan, settings, submission
        from vxtrain.submission.notify import Notifier
        from vxtrain.submission.carry import spans_from_env
        from vxtrain.submission.trace import trace_from_env

        adc = functools.cache(settings.adc_project)  # tier 4, asked once for the summary and every rung
        used = jobplan.used_settings(self.result, local=emulated, adc=adc)
        # As plan says it: which project and region, and where each came from (stderr).
        session.log.warning("%s", settings.summary(used))  # the handler says "vxtrain: "
        plan, rigging = jobplan.plan_of(self.result, self.key, emulated=emulated, in_place=in_place, adc=adc)
        trace = trace_from_env(os.environ, session.log)
        # flushed however the submit ends, the spans within a bound
        with Notifier(self.hooks, session.log, key=self.key) as notifier, \
                spans_from_env(os.environ, trace, session.log) as spans:
            top = spans.start("vxtrain submit", None, {"vxtrain.key": self.key, "vxtrain.rungs": len(plan.rungs)})
            options = submission.CarryOptions(self.watch, self.quota_check, notifier if self.hooks else None,
                                              self.command, self.unkept, trace, spans, top)
            try:
                view = submission.submit(session, plan, rigging, options)
                top.set({"vxtrain.job": str(view.get("name")), "vxtrain.state": str(view.get("state"))})
            except (VxtrainError, KeyboardInterrupt) as stopped:
                top.fail(f"{type(stopped).__name__}: {stopped}")
                raise
            finally:
                top.end()
        project = used["project"]
        return {**view, "project_source": project.source if project is not None else None}


def _submit_local(result: Result, send: _Send, hooks: Hooks, gpus: GpuOptions | None) -> JobViewJson:
    """An in-process emulator running the job with the local runner, followed to the end.
    With ``logs``, the job's lines reach it through the emulator's Logging service
    only (as on Vertex AI), not also straight from the replicas. The job is checked
    against this host's GPUs first: too few, and nothing is created (GpuShortageError)."""
    # lazy: the backends and the runtime, as in submit()
    from vxtrain import jobplan
    from vxtrain.backends import open_backend
    from vxtrain.runtime.gpus import GpuOptions, resolve
    from vxtrain.submission import Session

    gpus = gpus or GpuOptions()
    assert result.job is not None  # a valid result has its model
    resolve(result.job, gpus)  # the emulator hands out the same GPUs: refuse here, before a create
    local = jobplan.local_run(result)
    with open_backend("local", workdir=local.base_dir, gpus=gpus,
                      job_output=_Discard() if hooks.logs is not None else None) as backend, \
            Session(backend=backend, hooks=hooks) as session:
        return send.carry(session, emulated=True, in_place=True)


class _Discard(io.StringIO):
    """A text stream that keeps nothing."""

    def write(self, text: str) -> int:
        return len(text)


def quota(path: str | Path, options: Options | None = None, *, endpoint: str | None = None) -> QuotaReport:
    """The spec's quota needs against the project's limits in its region (Cloud Quotas API, or
    the emulator at ``endpoint``): a vxtrain.submission.quota.QuotaReport, with one report per
    rung of ``fallback:`` in its ``fallback``. A refused read is said (the ``vxtrain.submission``
    logger) and leaves the limits unknown. Raises SpecError and UsageError."""
    # lazy: as in submit()
    from vxtrain import jobplan
    from vxtrain.submission import Session
    from vxtrain.submission.quota import preflight

    result = load_job(path, options)
    reads: dict[str, Read] = {}  # one read of the limits per project, for every rung
    with Session(endpoint=endpoint) as session:
        reports = [preflight(session, rung.job, project=rung.project, region=rung.region, reads=reads)
                   for rung in jobplan.spec_rungs(result, local=endpoint is not None)]
    return replace(reports[0], fallback=tuple(reports[1:]))


def reconcile(bucket: str, *, project: str | None = None, endpoint: str | None = None) -> PassJson:
    """One pass over every unfinished plan kept in ``bucket`` (``gs://B[/PREFIX]``; of ``project``
    when given): each life's next steps taken, as ``vxtrain reconcile`` does
    (vxtrain.submission.reconcile). Its document: ``{"plans": [{"key", "state", "attempt", "rung",
    "job", "action", "cost_usd"}], "created", "cancelled", "finished"}``, with ``errors`` when an
    API error outlived its retries (the pass acted on every plan it could)."""
    # lazy: as in submit(); the plans bring google-cloud-storage
    from vxtrain.submission import Session
    from vxtrain.submission.reconcile import reconcile as one_pass

    if not bucket.startswith("gs://"):
        raise UsageError(f"--bucket takes gs://BUCKET[/PREFIX], got {bucket!r}")
    with Session(endpoint=endpoint) as session:
        return one_pass(session, bucket, project).to_json()


def jobs(query: Query, *, endpoint: str | None = None) -> Ledger:
    """The ledger (``vxtrain jobs``): the jobs ``query`` finds on Vertex AI (or the emulator at
    ``endpoint``), each with its queue wait, run time and estimated cost, grouped by key, then
    attempt, then rung (``.keys``; ``.stats()``: the queue wait's percentiles per machine and
    region; ``.to_json()``). ``query``: a vxtrain.submission.ledger.Query."""
    # lazy: as in submit()
    from vxtrain.submission import Session
    from vxtrain.submission.ledger import read

    with Session(endpoint=endpoint) as session:
        return read(session, query)


def cost(query: Query, by: str = "key", *, endpoint: str | None = None) -> CostReport:
    """What the jobs ``query`` finds cost (``vxtrain cost``), grouped ``by`` key, ``label:NAME``,
    machine, region or day: list prices × run time, running jobs up to now, the jobs with a
    price the catalog lacks in ``.unpriced`` (never guessed). Raises UsageError for another ``by``."""
    from vxtrain.submission.ledger import check_by, cost_report  # lazy: as in submit()

    by = check_by(by)  # before any call: a wrong --by lists nothing
    return cost_report(jobs(query, endpoint=endpoint), by)


def spec_regions(path: str | Path, options: Options | None = None, *,
                 endpoint: str | None = None) -> tuple[str, tuple[str, ...]]:
    """The project and the regions of a spec's rungs (its own, then each ``fallback:`` entry's,
    each once): where its jobs are. Raises SpecError."""
    from vxtrain import jobplan  # lazy: as in submit()

    rungs = list(jobplan.spec_rungs(load_job(path, options), local=endpoint is not None))
    return rungs[0].project, tuple(dict.fromkeys(rung.region for rung in rungs))


def logs(name: str, *, endpoint: str | None = None, replica: str | None = None,
         since: str | None = None) -> list[dict[str, str]]:
    """The log lines of the job ``name`` (a full resource name), oldest first, as
    ``{"replica", "timestamp", "severity", "text"}``: from Cloud Logging, or from the
    emulator at ``endpoint``. ``replica``: ``workerpoolK-I``; ``since``: a duration
    back (``10m``) or an RFC 3339 time."""
    # lazy: as in submit()
    from vxtrain.joblogs import parse_since
    from vxtrain.submission import Session

    start = parse_since(since) if since else None
    with Session(endpoint=endpoint) as session:
        return [e.to_json() for e in session.logs(name, replica=replica, since=start)]


def local_run(path: str | Path, options: Options | None = None, *, trial: str | None = None,
              seed: int | None = None, stop: threading.Event | None = None, out: TextIO = sys.stdout,
              gpus: GpuOptions | None = None) -> LocalRunResult | StudyResult:
    """Run the spec's replicas as processes on this host, with the environment Vertex AI
    would set, and return how the run ended. A spec with ``study:`` (and no ``trial``)
    runs the whole study: a vxtrain.runtime.study.StudyResult. ``trial``: run as trial N
    (from 1) of the study, with the N-th point it would run (grid order, or the random
    draws of ``seed``) as arguments, as Vertex AI appends a trial's parameters.
    ``stop``: set it to stop every replica. ``out``: where the replicas' lines go.
    ``gpus``: how this host's GPUs are handed out; too few raises GpuShortageError
    before anything starts. Raises SpecError and UsageError."""
    # lazy: the runtime (the runner and the study) costs ~150 ms of imports (-X importtime)
    # that validate and plan never need
    from vxtrain.runtime import runner, study
    from vxtrain.runtime.gpus import GpuOptions

    gpus = gpus or GpuOptions()
    result = load_job(path, options)
    assert result.job is not None and result.custom_job is not None  # a valid result is compiled
    base_dir = spec_folder(result.file)
    hpt = result.hyperparameter_tuning_job
    if hpt is not None and trial is None:
        config = study.StudyConfig.from_hpt_json(hpt)
        return study.run_study(result.job, job_spec_of(hpt), config, seed=seed, stop=stop, out=out,
                               base_dir=base_dir, gpus=gpus)
    extra_args = _trial_args(hpt, trial, seed) if hpt is not None and trial is not None else []
    return runner.run_job(result.job, job_spec_of(result.custom_job), trial=trial, extra_args=extra_args,
                          stop=stop, out=out, base_dir=base_dir, gpus=gpus)


def _trial_args(hpt: dict[str, Any], trial: str, seed: int | None) -> list[str]:
    """The ``--name=value`` arguments of trial ``trial`` of the study ``hpt``."""
    from vxtrain.runtime import study  # lazy: as in local_run()

    config = study.StudyConfig.from_hpt_json(hpt)
    # The first N points are the same whatever the count (grid order, or the seed's draws in turn):
    # a study of a billion trials draws only as many as --trial needs, and at most MAX_LOCAL_TRIALS.
    count = min(config.max_trials, int(trial))
    if count > study.MAX_LOCAL_TRIALS:
        raise UsageError(f"--trial {trial}: a local run draws the parameters of at most the first "
                         f"{study.MAX_LOCAL_TRIALS:,} trials")
    points = study.suggest(config.study_spec, count, seed=seed).points
    if int(trial) > len(points):
        raise UsageError(f"--trial {trial}: the study has {len(points)} trial(s), numbered from 1")
    return trial_args(points[int(trial) - 1])
