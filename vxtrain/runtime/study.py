"""Hyperparameter studies on this host: sampling, scheduling, measuring, judging.

The study's words (its search space, trials, metric goals, best trial) are
:mod:`vxtrain.vocab.studies`, which submission's job views and render share.

Used by ``vxtrain local-run`` on a spec with ``study:`` and by the emulator
(which ``submit --target local`` starts). Both hand over the study in its REST
JSON form (``studySpec`` with camelCase keys, as compile_hpt_job writes it and
``json_format.MessageToDict`` reads it back), so nothing here needs the
aiplatform protos: this module is safe on the validate/plan path.

Algorithms locally (Vertex AI's own service is not available here):

* ``GRID_SEARCH``: every combination of the integer ranges, discrete values and
  categorical values, in the order written, the last parameter varying
  fastest; at most ``max_trials`` of them.
* ``RANDOM_SEARCH``: independent uniform draws (log / reverse-log scales drawn
  uniformly in log space), reproducible with a seed.
* ``ALGORITHM_UNSPECIFIED`` (Vertex AI's Bayesian optimization): random search,
  with a note saying so.

Metrics are read the way Google's ``cloudml-hypertune`` package
(``hypertune.HyperTune.report_hyperparameter_tuning_metric``, PyPI
cloudml-hypertune 0.1.0.dev6) writes them: the file named by
``CLOUD_ML_HP_METRIC_FILE`` (default ``/tmp/hypertune/output.metrics``) holds one
JSON object per line, e.g.
``{"global_step": "1000", "accuracy": "0.987", "timestamp": 1525851440.1, "trial": "0"}``
(the package rewrites the file with its last 100 reports each time). Each
trial's chief gets its own file; the last value reported for a metric id is
the trial's final measurement.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
import queue
import random
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from vxtrain.errors import LocalRunError, VxtrainError
# The study's words (search space, trials, metrics) are shared with submission's views and
# render: their home is the vocabulary floor.
from vxtrain.vocab.studies import (INFEASIBLE, SUCCEEDED, MetricGoal, Parameters, ParameterValue, SearchParam,
                                   TrialResult, best_trial, discrete_number, grid_values, metric_goals, search_space,
                                   trial_args)

# Annotations only: plan imports this module, and a TypedDict class costs ~15 µs a field to
# create (measured).
if TYPE_CHECKING:
    from vxtrain.vocab import jobjson
    from vxtrain.runtime.gpus import GpuOptions, GpuPlan, TrialGpus
    from vxtrain.runtime.runner import LocalRunResult, Output
    from vxtrain.model import Job
    from vxtrain.vocab.studies import TrialJson

    class StudyJson(TypedDict):
        """A local study's outcome in ``--output json``."""

        succeeded: bool
        cancelled: bool
        message: str
        notes: list[str]
        trials: list[TrialJson]
        best_trial: TrialJson | None

    class _Outputs(TypedDict, total=False):
        """run_job's ``out`` and ``err``, passed only when the study has its own (else run_job's defaults)."""

        out: Output
        err: Output


METRIC_FILE_ENV = "CLOUD_ML_HP_METRIC_FILE"
DEFAULT_METRIC_FILE = "/tmp/hypertune/output.metrics"
#: The tag cloudml-hypertune uses when none is given.
DEFAULT_METRIC_TAG = "training/hptuning/metric"

_GRID = "GRID_SEARCH"
_RANDOM = "RANDOM_SEARCH"


@dataclass(frozen=True)
class Suggestions:
    """The parameters of each trial, the local algorithm used, and notes for the user."""

    points: list[Parameters]
    algorithm: str
    notes: list[str] = field(default_factory=list)


def local_algorithm(algorithm: str | None) -> tuple[str, str | None]:
    """(``grid`` | ``random``, a note or None) for a StudySpec algorithm name."""
    if algorithm == _GRID:
        return "grid", None
    if algorithm == _RANDOM:
        return "random", None
    return "random", ("algorithm 'default' is Vertex AI's Bayesian optimization, which does not run "
                      "locally: trials here use random search")


def suggest(study_spec: Mapping[str, Any], count: int, *, seed: int | None = None) -> Suggestions:
    """Parameters for up to ``count`` trials, drawn by the study's algorithm (locally)."""
    space = search_space(study_spec)
    algorithm, note = local_algorithm(study_spec.get("algorithm"))
    notes = [note] if note else []
    if algorithm == "grid":
        points = grid_points(space)
        if len(points) < count:
            notes.append(f"the grid has {len(points)} point(s), fewer than max_trials ({count}): "
                         f"{len(points)} trial(s) run")
        return Suggestions(points[:count], algorithm, notes)
    rng = random.Random(seed)
    return Suggestions([random_point(space, rng) for _ in range(count)], algorithm, notes)


def grid_points(space: Sequence[SearchParam]) -> list[Parameters]:
    """Every combination, in the order written, the last parameter varying fastest."""
    axes = [grid_values(p) for p in space]
    return [dict(zip((p.id for p in space), combo)) for combo in itertools.product(*axes)]


def random_point(space: Sequence[SearchParam], rng: random.Random) -> Parameters:
    """One independent random draw of every parameter."""
    return {p.id: _draw(p, rng) for p in space}


def _draw(param: SearchParam, rng: random.Random) -> ParameterValue:
    if param.kind in ("discrete", "categorical"):
        value = rng.choice(list(param.values))
        return discrete_number(value) if param.kind == "discrete" else value
    low, high = float(param.min or 0.0), float(param.max or 0.0)
    if param.kind == "integer" and param.scale == "UNIT_LINEAR_SCALE":
        return rng.randint(int(low), int(high))  # every integer equally likely, the bounds included
    x = _scaled(low, high, param.scale, rng)
    if param.kind == "integer":
        return min(int(high), max(int(low), round(x)))
    return x


def _scaled(low: float, high: float, scale: str, rng: random.Random) -> float:
    """Uniform in linear, log or reverse-log space (the log scales need low > 0).

    UNIT_REVERSE_LOG_SCALE spreads values near the top apart: the log draw mirrored.
    https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec#ScaleType
    """
    if scale == "UNIT_LINEAR_SCALE" or low <= 0 or high <= low:
        return rng.uniform(low, high)
    x = math.exp(rng.uniform(math.log(low), math.log(high)))
    x = low + high - x if scale == "UNIT_REVERSE_LOG_SCALE" else x
    return min(high, max(low, x))


# --- metrics ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Measurement:
    """The last reported value of each metric and the step it was reported at."""

    metrics: dict[str, float]
    step: int | None = None


def read_metrics(path: str | Path, metric_ids: Iterable[str]) -> Measurement:
    """The last value of each of ``metric_ids`` in a cloudml-hypertune metric file.

    A missing file, malformed lines and non-numeric values are skipped: a
    trial that reported nothing has an empty measurement.
    """
    wanted = list(metric_ids)
    found: dict[str, float] = {}
    step: int | None = None
    for record in _records(Path(path)):
        for metric_id in wanted:
            value = _as_float(record.get(metric_id))
            if value is not None:
                found[metric_id] = value
                step = _as_int(record.get("global_step"), step)
    return Measurement(found, step)


def _records(path: Path) -> Iterable[Mapping[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def _as_float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _as_int(value: Any, default: int | None) -> int | None:
    number = _as_float(value)
    return int(number) if number is not None else default


# --- scheduling ---------------------------------------------------------------------------

@dataclass(frozen=True)
class StudyConfig:
    """What a HyperparameterTuningJob says about running its trials."""

    study_spec: jobjson.StudySpec
    max_trials: int
    parallel_trials: int = 1
    max_failed_trials: int = 0

    @classmethod
    def from_hpt_json(cls, job: Mapping[str, Any]) -> StudyConfig:
        """From the REST JSON of a HyperparameterTuningJob (counts may be strings or absent)."""
        # A copy (the config is frozen) of the job's studySpec: a StudySpec, be it compiled or read back.
        study_spec = cast("jobjson.StudySpec", dict(job.get("studySpec", {})))
        return cls(study_spec, int(job.get("maxTrialCount") or 1),
                   max(1, int(job.get("parallelTrialCount") or 1)), int(job.get("maxFailedTrialCount") or 0))

    @property
    def failure_limit(self) -> int:
        """Failed trials that fail the study.

        maxFailedTrialCount is "the number of failed Trials that need to be seen
        before failing the HyperparameterTuningJob. If set to 0, Vertex AI decides"
        (https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.hyperparameterTuningJobs).
        Locally, 0 means: the study fails only when every trial failed.
        """
        return self.max_failed_trials if self.max_failed_trials > 0 else self.max_trials


RunTrial = Callable[[str, Parameters], TrialResult]
TrialHook = Callable[[TrialResult], None]


def schedule(points: Sequence[Parameters], run_trial: RunTrial, *, parallel: int, failure_limit: int,
             stop: threading.Event | None = None, on_start: TrialHook | None = None,
             on_end: TrialHook | None = None) -> list[TrialResult]:
    """Run trial "1".."N" with ``run_trial``, at most ``parallel`` at once (threads).

    Scheduling stops once ``failure_limit`` trials failed or ``stop`` is set;
    trials already running finish. Returns the trials that started, in id order.
    """
    started: list[TrialResult] = []
    failed = 0
    with futures.ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="vxtrain-trial") as pool:
        running: dict[futures.Future[TrialResult], int] = {}
        for number, params in enumerate(points, 1):
            failed += _reap(running, started, on_end, block=len(running) >= parallel)
            if failed >= failure_limit or (stop is not None and stop.is_set()):
                break
            trial = TrialResult(str(number), dict(params))
            started.append(trial)
            if on_start is not None:
                on_start(trial)
            running[pool.submit(run_trial, trial.id, dict(params))] = number - 1
        while running:
            _reap(running, started, on_end, block=True)
    return started


def _reap(running: dict[futures.Future[TrialResult], int], started: list[TrialResult],
          on_end: TrialHook | None, *, block: bool) -> int:
    """Record the trials that ended (waiting for one when ``block``); the number that failed."""
    if not running:
        return 0
    done, _ = futures.wait(list(running), timeout=None if block else 0, return_when=futures.FIRST_COMPLETED)
    failed = 0
    for future in done:
        index = running.pop(future)
        result = _result_of(future, started[index])
        started[index] = result
        failed += result.failed
        if on_end is not None:
            on_end(result)
    return failed


def _result_of(future: futures.Future[TrialResult], trial: TrialResult) -> TrialResult:
    try:
        return future.result()
    except OSError as exc:  # its folder or metrics file could not be written or read: the trial failed
        # (a replica that cannot start is LocalTrials' LocalRunError; anything else is a bug of
        # ours and reaches the command line's one error handler)
        return dataclasses.replace(trial, state=INFEASIBLE, message=f"the trial could not run: {exc}")


# --- running a study with the local runner --------------------------------------------------

@dataclass
class StudyResult:
    """How a study ended: its trials, the best one, and why it failed (if it did)."""

    trials: list[TrialResult]
    goals: list[MetricGoal]
    succeeded: bool
    message: str = ""
    cancelled: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def best(self) -> TrialResult | None:
        """The best succeeded trial by the first metric."""
        return best_trial(self.trials, self.goals)

    def to_json(self) -> StudyJson:
        """Plain data for ``--output json``."""
        best = self.best
        return {"succeeded": self.succeeded, "cancelled": self.cancelled, "message": self.message,
                "notes": list(self.notes), "trials": [t.to_json() for t in self.trials],
                "best_trial": best.to_json() if best is not None else None}


def trial_job(job: Job, metrics_dir: Path) -> Job:
    """``job`` with ``CLOUD_ML_HP_METRIC_FILE`` in each pool's env: one file per pool in
    ``metrics_dir``; the chief's (``workerpool0.metrics``) is the trial's measurement."""
    pools = {}
    for role, pool in job.pools.items():
        env = {**pool.env, METRIC_FILE_ENV: str(metrics_dir / f"workerpool{pool.index}.metrics")}
        pools[role] = dataclasses.replace(pool, env=env)
    return dataclasses.replace(job, pools=pools)


def chief_metric_file(metrics_dir: Path) -> Path:
    """The metric file of a trial's chief (pool 0)."""
    return metrics_dir / "workerpool0.metrics"


@dataclass
class LocalTrials:
    """Runs trials of one study with the local runner (``vxtrain.runtime.runner.run_job``)."""

    job: Job
    job_spec: Mapping[str, Any]
    goals: Sequence[MetricGoal]
    workspace: Path
    stop: threading.Event | None = None
    out: Output | None = None
    base_dir: str | Path | None = None
    job_id: str | None = None
    err: Output | None = None  # where replicas' stderr lines go (else ``out``)
    #: The GPU plan of each trial slot: a trial takes one while it runs (see :func:`trial_plans`).
    gpu_slots: queue.SimpleQueue[GpuPlan] | None = None

    def __call__(self, trial_id: str, params: Parameters) -> TrialResult:
        """Run trial ``trial_id`` to its end and measure it."""
        gpu_plan = self.gpu_slots.get() if self.gpu_slots is not None else None
        try:
            return self._run(trial_id, params, gpu_plan)
        finally:
            if self.gpu_slots is not None and gpu_plan is not None:
                self.gpu_slots.put(gpu_plan)  # the next trial gets these GPUs

    def _run(self, trial_id: str, params: Parameters, gpu_plan: GpuPlan | None) -> TrialResult:
        from vxtrain.runtime import runner as local  # lazy: plan reads this module; only runs need the runner

        metrics_dir = self.workspace / f"trial-{trial_id}"
        metrics_dir.mkdir(parents=True, exist_ok=True)
        kwargs: _Outputs = {} if self.out is None else {"out": prefixed(self.out, f"[trial {trial_id}] ")}
        if self.err is not None:
            kwargs["err"] = prefixed(self.err, f"[trial {trial_id}] ")
        try:
            run = local.run_job(trial_job(self.job, metrics_dir), self.job_spec, trial=trial_id,
                                extra_args=trial_args(params), stop=self.stop, base_dir=self.base_dir,
                                job_id=self.job_id, gpu_plan=gpu_plan, **kwargs)
        except LocalRunError as exc:
            return TrialResult(trial_id, params, INFEASIBLE, message=f"could not start: {exc}")
        measured = read_metrics(chief_metric_file(metrics_dir), [g.id for g in self.goals])
        return _trial_outcome(trial_id, params, run, measured)


def prefixed(out: Output, prefix: str) -> Callable[[str], None]:
    """An output that writes each line to ``out`` behind ``prefix`` (trials run side by side).

    Lines go out under the local runner's process-wide write lock, the one its
    replicas' printers hold, so lines of parallel trials never interleave.
    """
    from vxtrain.runtime.runner import write_line  # lazy: as in LocalTrials.__call__

    def write(line: str) -> None:
        write_line(out, prefix + line)
    return write


def _trial_outcome(trial_id: str, params: Parameters, run: LocalRunResult, measured: Measurement) -> TrialResult:
    # Locally a trial succeeds on exit 0 whether or not it reported the metric (docs/studies.md, "Trials run locally").
    if run.succeeded:
        note = "" if measured.metrics else "reported no metric"
        return TrialResult(trial_id, params, SUCCEEDED, measured.metrics, measured.step, note)
    message = "cancelled" if run.cancelled else run.message
    return TrialResult(trial_id, params, INFEASIBLE, measured.metrics, measured.step, message)


def run_study(job: Job, job_spec: Mapping[str, Any], config: StudyConfig, *, seed: int | None = None,
              stop: threading.Event | None = None, out: Output | None = None,
              base_dir: str | Path | None = None, job_id: str | None = None,
              on_start: TrialHook | None = None, on_end: TrialHook | None = None,
              err: Output | None = None, gpus: GpuOptions | None = None,
              gpu_plan: GpuPlan | None = None) -> StudyResult:
    """Run the study's trials on this host, ``parallel_trials`` at a time (fewer when this host's
    GPUs fit fewer, saying so); never raises for a failed trial (the result says which failed
    and whether the study did). GPUs: ``gpu_plan`` when the caller resolved it already, else
    this host's handed out as ``gpus`` says; GpuShortageError, before any trial, when the
    host has GPUs but too few for one trial."""
    from vxtrain.runtime.gpus import GpuOptions, resolve, trial_slots  # lazy: plan reads this module; only runs need GPUs

    check_study_size(job, config)
    plan = resolve(job, gpus or GpuOptions()) if gpu_plan is None else gpu_plan
    slots = trial_slots(plan, config.parallel_trials)
    suggestions = suggest(config.study_spec, config.max_trials, seed=seed)
    goals = metric_goals(config.study_spec)
    notes = [*suggestions.notes, *([slots.note] if slots.note else [])]
    if out is not None:
        say = prefixed(out, "[vxtrain] ")
        for line in [*(f"note: {n}" for n in [*notes, *plan.notes]), *(f"warning: {w}" for w in plan.warnings)]:
            say(line + "\n")
    with tempfile.TemporaryDirectory(prefix="vxtrain-study-") as workspace:
        runner = LocalTrials(job, job_spec, goals, Path(workspace), stop, out, base_dir, job_id, err,
                             trial_plans(job, plan, slots))
        trials = schedule(suggestions.points, runner, parallel=slots.at_once,
                          failure_limit=config.failure_limit, stop=stop, on_start=on_start, on_end=on_end)
    return judge(trials, goals, config, cancelled=stop is not None and stop.is_set(), notes=notes)


#: Most trials a study runs on this host (each is a whole run of the job, one after the other;
#: their parameters are drawn up front): a billion would fill memory before the first ran.
MAX_LOCAL_TRIALS = 10_000


def check_study_size(job: Job, config: StudyConfig) -> None:
    """VxtrainError, before any trial, for more trials than a local study runs, or more
    processes at once (its parallel trials together) than the host can start."""
    if config.max_trials > MAX_LOCAL_TRIALS:
        raise VxtrainError(f"the study asks for {config.max_trials:,} trials; a local study runs at most "
                           f"{MAX_LOCAL_TRIALS:,} (each a whole run of the job): lower max_trials to run it "
                           "here, or submit it to Vertex AI")
    from vxtrain.runtime import runner as local  # lazy: as in LocalTrials.__call__

    parallel = min(config.parallel_trials, config.max_trials)
    local.check_host_can_start(local.local_processes(job) * parallel,
                               f"the study ({parallel:,} trial(s) at once)" if parallel > 1 else "the study")


def trial_plans(job: Job, plan: GpuPlan, slots: TrialGpus) -> queue.SimpleQueue[GpuPlan]:
    """One GPU plan per trial slot, each over that slot's own GPUs (their messages said once)."""
    from vxtrain.runtime.gpus import GpuOptions, resolve  # lazy: as in run_study

    plans: queue.SimpleQueue[GpuPlan] = queue.SimpleQueue()
    for devices in slots.slots:
        own = plan if devices is None else resolve(job, GpuOptions(devices, plan.share))
        plans.put(own.quiet())
    return plans


def judge(trials: list[TrialResult], goals: list[MetricGoal], config: StudyConfig, *,
          cancelled: bool = False, notes: Sequence[str] = ()) -> StudyResult:
    """The study's outcome from its trials: failed once ``failure_limit`` trials failed,
    or when every trial that ran failed."""
    failed = [t for t in trials if t.failed]
    if cancelled:
        return StudyResult(trials, goals, False, "the study was cancelled", True, list(notes))
    # Every trial failed: a study whose grid is smaller than the failure limit
    # must not "succeed" with no trial to show for it.
    if failed and (len(failed) >= config.failure_limit or len(failed) == len(trials)):
        why = (f"the limit is {config.failure_limit}" if len(failed) >= config.failure_limit
               else "every trial failed")
        message = f"{len(failed)} trial(s) failed ({why}); last: trial {failed[-1].id}: {failed[-1].message}"
        return StudyResult(trials, goals, False, message, notes=list(notes))
    done = sum(t.state == SUCCEEDED for t in trials)
    return StudyResult(trials, goals, True, f"{done} of {len(trials)} trial(s) succeeded", notes=list(notes))


def node_trials(job: Job, max_trials: int) -> dict[str, int]:
    """Machine type → nodes × trials the whole study uses (machine-hours are unknown ahead)."""
    out: dict[str, int] = {}
    for pool in job.ordered_pools():
        machine = pool.machine_type or "?"
        if pool.accelerator is not None and pool.accelerator.type:
            machine += f" + {pool.accelerator.count or 1} x {pool.accelerator.type}"
        out[machine] = out.get(machine, 0) + (pool.replicas or 0) * max_trials
    return out
