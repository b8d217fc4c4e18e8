"""What a job's thread does once the job is RUNNING: run it on this host, or simulate it.

A CustomJob runs with the local runner (:mod:`vxtrain.runtime.runner`), a
HyperparameterTuningJob's trials with :mod:`vxtrain.runtime.study`; with
``simulate_seconds`` nothing runs and every job succeeds on a timer. The job
model comes from the project's one converter of Vertex's CustomJob shape
(:func:`vxtrain.formats.gcloud.job_from_custom_job`), so the emulator runs a
job as ``vxtrain local-run`` would run the same CustomJob — on the emulator's
host, with that host's GPUs handed out as its ``gpus`` options say
(:mod:`vxtrain.runtime.gpus`): a job the host has too few GPUs for ends FAILED
before any replica starts.
"""
from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

from google.cloud.aiplatform_v1.types import hyperparameter_tuning_job as hpt
from google.cloud.aiplatform_v1.types import study as study_types
from google.cloud.aiplatform_v1.types.job_state import JobState
from google.protobuf import json_format

from vxtrain import slots
from vxtrain.backends.emulator.common import CANCELLED, FAILED, SUCCEEDED, now, spec_of
from vxtrain.backends.emulator.logging_service import LogStore
from vxtrain.errors import LocalRunError, VxtrainError
from vxtrain.formats.gcloud import job_from_custom_job
from vxtrain.model import Job, LocalSpec
from vxtrain.runtime import runner, study
from vxtrain.runtime.gpus import GpuOptions, GpuPlan, resolve
from vxtrain.vocab.kinds import CUSTOM, TUNING, JobKind


class RunningJob(Protocol):
    """What the runner needs of a stored job (the store's record has it): the job itself,
    written under the store's lock, its kind, and the switch that cancels it. Declared
    here so the runner needs nothing from the store that calls it."""

    kind: JobKind
    job: Any
    stop: threading.Event


class NotRunnable(Exception):
    """The job has no command that can run on this host."""


def job_model(job: Any, local: LocalSpec | None = None) -> tuple[Job, dict[str, Any]]:
    """The runner's Job model and the CustomJobSpec (REST dict) of a stored job.

    Raises NotRunnable with a hint when a pool has nothing to run on this host.
    """
    spec_msg = spec_of(job)
    spec = json_format.MessageToDict(type(spec_msg).pb(spec_msg))
    model = job_from_custom_job({"displayName": job.display_name, "labels": dict(job.labels),
                                 CUSTOM.spec_key: _with_replica_counts(spec)})
    model.local = local
    _check_runnable(model)
    return model, spec


def _with_replica_counts(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with every pool's replicaCount written out.

    Proto3 JSON leaves zero values out, so a pool sent without replica_count
    has 0 replicas; the converter would read the missing key as the native
    default of 1.
    """
    if "workerPoolSpecs" not in spec:
        return dict(spec)
    pools = [{"replicaCount": 0, **pool} if pool else pool for pool in spec["workerPoolSpecs"]]
    return {**spec, "workerPoolSpecs": pools}


def _check_runnable(model: Job) -> None:
    if model.local is not None and model.local.command:
        return
    for pool in model.ordered_pools():
        module = pool.python_package.module if pool.python_package else None
        if pool.role != "reduction_server" and not pool.command and not module:
            raise NotRunnable(
                f"{slots.SLOTS[pool.index].cluster_key} has nothing to run on this host: its container "
                f"({pool.image or 'no image'}) has no command, and the emulator cannot run the image's "
                "entrypoint. Give `local: {command: [...]}` in the spec, set a container command "
                "(`command:` in the pool or in `defaults`), or start the emulator with --simulate SECONDS.")


@dataclass
class Outcome:
    """How a job (or trial) ended."""

    state: JobState
    code: int = 0
    message: str = ""


def cancelled(kind: JobKind) -> Outcome:
    """The outcome of a cancelled job."""
    # Vertex's doc: a cancelled job gets error.code 1 (Code.CANCELLED).
    return Outcome(CANCELLED, 1, f"{kind.label} was cancelled.")


class JobRunner:
    """Runs (or simulates) stored jobs; one per emulator, shared by every job thread.

    ``simulate_seconds``: instead of running jobs, succeed after a share of
    that many seconds. ``workdir``: where relative commands of jobs run
    (default: the current directory at start). ``seed``: seeds the random
    search of studies. ``lock`` is the store's: trials are written into the
    stored job under it. Every line a job prints goes to ``out`` (default
    stderr) and, as a LogEntry of its replica, into ``logs``. ``gpus``: how this
    host's GPUs are handed out (``vxtrain emulator --gpus/--share-gpus/--no-gpus``).
    """

    def __init__(self, lock: threading.RLock, *, simulate_seconds: float | None = None,
                 workdir: str | Path | None = None, out: TextIO | None = None, seed: int | None = None,
                 logs: LogStore | None = None, gpus: GpuOptions | None = None) -> None:
        self.simulate_seconds = simulate_seconds
        self.gpus = gpus or GpuOptions()
        self.workdir = Path(workdir) if workdir is not None else Path.cwd()
        self.out = out
        self.logs = logs if logs is not None else LogStore()
        self.seed = seed  # random search of studies: a seed makes trial parameters reproducible
        self._lock = lock
        self._locals: list[tuple[dict[str, str], LocalSpec | None, Path | None]] = []

    def register_local(self, labels: Mapping[str, str], local: LocalSpec | None,
                       base_dir: str | Path | None = None) -> None:
        """Run jobs whose labels include ``labels`` with ``local`` (``local.command`` etc.),
        relative paths from ``base_dir`` when given."""
        with self._lock:
            self._locals.append((dict(labels), local, None if base_dir is None else Path(base_dir)))

    def execute(self, record: RunningJob, step: float) -> Outcome:
        """Run or simulate the job of ``record`` to its end (``step``: the state walk's pace)."""
        if self.simulate_seconds is not None:
            return self._simulate(record, step * 2)
        local, base_dir = self._place(record)
        try:
            model, spec = job_model(record.job, local)
        except NotRunnable as exc:
            return Outcome(FAILED, 9, str(exc))  # 9: FAILED_PRECONDITION
        try:
            if record.kind is TUNING:  # more trials or processes than this host runs: before any plan
                study.check_study_size(model, study.StudyConfig.from_hpt_json(_study_json(record.job)))
            else:
                runner.check_host_can_start(runner.local_processes(model), "the job")
            gpu_plan = resolve(model, self.gpus, emulator=True)
        except VxtrainError as exc:  # GpuShortageError, or the bounds: nothing started, the job cannot run here
            return Outcome(FAILED, 9, f"The job cannot run on this emulator's host: {exc}")
        if record.kind is TUNING:
            return self._run_trials(record, model, spec, base_dir, gpu_plan)
        return self._run(record, model, spec, base_dir, gpu_plan=gpu_plan)

    def note(self, record: RunningJob, line: str) -> None:
        """Write ``line`` (ending in a newline) into the job's output and log, as the emulator's
        own words (``[vxtrain] ...``), e.g. that it took the job's machines (``--preempt``)."""
        self._outputs(record)[0](line)

    def _simulate(self, record: RunningJob, seconds: float) -> Outcome:
        """Run nothing; after ``seconds`` succeed (a study gets its trials, all succeeded)."""
        if record.stop.wait(seconds):
            return cancelled(record.kind)
        if record.kind is TUNING:
            with self._lock:
                config = study.StudyConfig.from_hpt_json(_study_json(record.job))
                if config.max_trials > study.MAX_LOCAL_TRIALS:  # their points are drawn up front
                    return Outcome(FAILED, 9, f"The job cannot run on this emulator's host: the study asks for "
                                   f"{config.max_trials:,} trials, and it simulates at most "
                                   f"{study.MAX_LOCAL_TRIALS:,}")
                points = study.suggest(config.study_spec, config.max_trials, seed=self.seed).points
                for number, params in enumerate(points, 1):
                    record.job.trials.append(_trial(str(number), params, study_types.Trial.State.SUCCEEDED))
        return Outcome(SUCCEEDED)

    def _place(self, record: RunningJob) -> tuple[LocalSpec | None, Path]:
        """The ``local:`` block registered for the job, and the folder its relative paths
        start from: the spec's, when this host has it (a remote emulator may not), else
        the emulator's ``workdir``, saying so in the job's log."""
        with self._lock:
            found = next(((local, base) for labels, local, base in reversed(self._locals)  # the latest wins
                          if all(record.job.labels.get(k) == v for k, v in labels.items())), (None, None))
        local, base_dir = found
        if base_dir is None or base_dir.is_dir():
            return local, base_dir or self.workdir
        self.note(record, f"[vxtrain] the spec's folder {base_dir} is not on this host: "
                          f"running from {self.workdir}\n")
        return local, self.workdir

    def _run(self, record: RunningJob, model: Job, spec: dict[str, Any], base_dir: Path, *,
             gpu_plan: GpuPlan, trial: str | None = None, extra_args: Sequence[str] = ()) -> Outcome:
        """One run of the job's replicas with the local runner."""
        # Job output goes to stderr by default: with --target local stdout
        # carries the command's JSON document only.
        out, err = self._outputs(record)
        try:
            result = runner.run_job(model, spec, trial=trial, extra_args=tuple(extra_args), stop=record.stop,
                                    out=out, err=err, base_dir=base_dir, gpu_plan=gpu_plan,
                                    job_id=record.job.name.rsplit("/", 1)[-1])
        except LocalRunError as exc:  # a replica could not start: nothing is left running
            return Outcome(FAILED, 9, f"The job could not start on this host: {exc}")
        if record.stop.is_set():
            return cancelled(record.kind)
        if result.succeeded:
            return Outcome(SUCCEEDED)
        return Outcome(FAILED, 3, _failure_message(result))

    def _outputs(self, record: RunningJob) -> tuple[Callable[[str], None], Callable[[str], None]]:
        """Where a job's lines go (the runner's ``out`` and ``err``): ``self.out`` (stderr
        when None, looked up now: tests swap it), and the Logging service's store, as
        entries of the job's replicas: INFO, or ERROR for what a replica printed on
        stderr, as Vertex AI logs them."""
        out = self.out or sys.stderr
        _, project, _, _, _, job_id = record.job.name.split("/")

        def writer(severity: str) -> Callable[[str], None]:
            feed = self.logs.feed(project, job_id, severity)

            def write(text: str) -> None:
                out.write(text)
                out.flush()
                feed(text)
            return write
        return writer("INFO"), writer("ERROR")

    def _run_trials(self, record: RunningJob, model: Job, spec: dict[str, Any], base_dir: Path,
                    gpu_plan: GpuPlan) -> Outcome:
        """The study's trials with the local runner (vxtrain.runtime.study), ``parallel_trial_count`` at once."""
        with self._lock:
            config = study.StudyConfig.from_hpt_json(_study_json(record.job))
        out, err = self._outputs(record)
        result = study.run_study(model, spec, config, seed=self.seed, stop=record.stop, out=out, err=err,
                                 base_dir=base_dir, job_id=record.job.name.rsplit("/", 1)[-1],
                                 on_start=lambda t: self._trial_started(record, t),
                                 on_end=lambda t: self._trial_ended(record, t), gpu_plan=gpu_plan)
        if result.cancelled:
            return cancelled(record.kind)
        if not result.succeeded:
            return Outcome(FAILED, 3, result.message)
        return Outcome(SUCCEEDED)

    def _trial_started(self, record: RunningJob, trial: Any) -> None:
        with self._lock:
            record.job.trials.append(_trial(trial.id, trial.parameters, study_types.Trial.State.ACTIVE))

    def _trial_ended(self, record: RunningJob, trial: Any) -> None:
        """Record a trial's end: SUCCEEDED, or INFEASIBLE with the reason; its final measurement."""
        with self._lock:
            stored = next(t for t in record.job.trials if t.id == trial.id)
            stored.state = study_types.Trial.State.__members__[trial.state]
            stored.end_time = now()
            if trial.metrics:
                stored.final_measurement = study_types.Measurement(
                    step_count=trial.step or 0,
                    metrics=[{"metric_id": k, "value": v} for k, v in trial.metrics.items()])
            if trial.state != "SUCCEEDED":
                stored.infeasible_reason = trial.message


def _trial(number: str, params: Mapping[str, Any], state: Any) -> study_types.Trial:
    trial = study_types.Trial(id=number, state=state, start_time=now(),
                              parameters=[{"parameter_id": k, "value": v} for k, v in params.items()])
    if state == study_types.Trial.State.SUCCEEDED:
        trial.end_time = trial.start_time
    return trial


def _study_json(job: hpt.HyperparameterTuningJob) -> dict[str, Any]:
    """The REST JSON of what vxtrain.runtime.study reads: studySpec and the trial counts."""
    return {"studySpec": json_format.MessageToDict(study_types.StudySpec.pb(job.study_spec)),
            "maxTrialCount": job.max_trial_count, "parallelTrialCount": job.parallel_trial_count,
            "maxFailedTrialCount": job.max_failed_trial_count}


def _failure_message(result: Any) -> str:
    """Vertex's wording for a failed replica ("The replica workerpool0-0 exited
    with a non-zero status of 1."), then the runner's own account."""
    replica = result.failed_replica or slots.replica_name(0, 0)
    head = f"The replica {replica} exited with a non-zero status of {result.exit_code}."
    return f"{head} ({result.message})" if result.message else head

