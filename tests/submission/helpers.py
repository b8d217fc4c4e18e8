"""What the submission tests share: a fast retry policy, a session on a backend, and a
job submitted through the path users run (vxtrain.submission.submit over a plan)."""
from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from vxtrain import errors, submission
from vxtrain.backends.base import JobBackend, LocalRun
from vxtrain.submission.decide import Follow, Watch
from vxtrain.submission.events import Hooks, ProgressFn
from vxtrain.submission.retry import Backoff

PROJECT, REGION = "p", "us-central1"
PARENT = f"projects/{PROJECT}/locations/{REGION}"
FAST = Backoff(initial=0.01, maximum=0.05, deadline=5.0)
T = TypeVar("T")


def job(code: str = "pass", name: str = "unit") -> dict[str, Any]:
    """A CustomJob (REST JSON) whose chief runs ``python -c code`` on this host."""
    return {"displayName": name, "jobSpec": {"workerPoolSpecs": [{
        "machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1",
        "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/train:1",
                          "command": [sys.executable, "-c", code]}}]}}


def session(target: JobBackend | str, *, retry: Backoff | None = FAST, poll: Backoff | None = None,
            progress: ProgressFn | None = None) -> submission.Session:
    """A session on ``target``: an open backend (shared by every region), or an emulator's address."""
    if isinstance(target, str):
        return submission.Session(endpoint=target, retry=retry, poll=poll, hooks=Hooks(progress))
    return submission.Session(backend=target, retry=retry, poll=poll, hooks=Hooks(progress))


def submit_job(backend: JobBackend | str, custom_job: dict[str, Any] | None = None, *, key: str | None = None,
               wait: bool = False, retry: Backoff | None = FAST, progress: ProgressFn | None = None,
               project: str = PROJECT, region: str = REGION, bucket: str | None = None, check: bool = True,
               local: LocalRun | None = None) -> dict[str, Any]:
    """``custom_job`` (default: ``job()``) submitted as ``vxtrain submit`` does, as a plan of one
    rung; with ``wait``, followed to its end (``check``: a failed job raises, else its document)."""
    plan = submission.Plan(key or uuid.uuid4().hex,
                           (submission.PlannedRung(0, project, region, custom_job or job()),))
    watch = Watch(Follow.end if wait else Follow.none, explicit=key is not None)
    with session(backend, retry=retry, progress=progress) as s:
        try:
            return submission.submit(s, plan, [submission.Rigging(local, None, bucket)],
                                     submission.CarryOptions(watch, quota_check=False))
        except errors.JobFailedError as failed:
            if check:
                raise
            return dict(failed.job)


class _Heard(logging.Handler):
    def __init__(self, say: Callable[[str], object]) -> None:
        super().__init__(logging.DEBUG)
        self.say = say

    def emit(self, record: logging.LogRecord) -> None:
        self.say(record.getMessage())


@contextmanager
def heard(say: Callable[[str], object]) -> Iterator[None]:
    """While the block runs, ``say`` gets every line the ``vxtrain.submission`` logger is told."""
    logger = logging.getLogger("vxtrain.submission")
    handler = _Heard(say)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def saying(say: Callable[[str], object], call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call(*args, **kwargs)`` while ``say`` hears the logger's lines (see ``heard``)."""
    with heard(say):
        return call(*args, **kwargs)
