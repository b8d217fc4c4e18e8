"""Submitting and following jobs: the Python API behind ``vxtrain submit``, ``status``,
``wait``, ``cancel``, ``list``, ``logs`` and ``reconcile``.

A job's life is data and one pure function. Its rooms, from the top:

* :mod:`~vxtrain.submission.carry`: a life carried, observe → decide → act, for one
  submit (with or without ``--wait``; a re-run with its key);
* :mod:`~vxtrain.submission.decide`: ``decide(plan, jobs, now)``, the whole life as one
  pure function (the ladder, recovery, the election of the oldest job, resuming);
* :mod:`~vxtrain.submission.plan`: the plan (the rungs as sent, the recovery policy, the
  notification targets by name), pure data;
* :mod:`~vxtrain.submission.create`, :mod:`~vxtrain.submission.lease`: creating a job
  exactly once (the label protocol; with a bucket, a lease per attempt);
* :mod:`~vxtrain.submission.placement`, :mod:`~vxtrain.submission.quota`,
  :mod:`~vxtrain.submission.publish`: what runs before a create (the persistent resource,
  the quota preflight, the images and packages);
* :mod:`~vxtrain.submission.session`: one target's settings (backend, retry and poll
  policy, hooks, logger) and the operations on one job (get, wait, cancel, list, logs);
* :mod:`~vxtrain.submission.notify`: the events posted to webhooks;
* :mod:`~vxtrain.submission.views`, :mod:`~vxtrain.submission.retry`,
  :mod:`~vxtrain.submission.names`, :mod:`~vxtrain.submission.events`: what a job looks
  like, retrying, names and labels, the logger and hooks.

Calls go through a ``JobBackend`` (vxtrain.backends.base) for a job kind
(vxtrain.vocab.kinds). Nothing here prints: lines go to the ``vxtrain.submission`` logger.
"""
from __future__ import annotations

from vxtrain.submission.carry import CarryOptions, Rigging, submit
from vxtrain.submission.events import Hooks
from vxtrain.submission.names import LOCAL_PROJECT, LOCAL_REGION, build_filter, label_value, resolve_name
from vxtrain.submission.plan import Plan, PlannedRung, RecoveryPolicy
from vxtrain.submission.session import Session
from vxtrain.submission.views import JobView

__all__ = [
    "CarryOptions", "Hooks", "JobView", "LOCAL_PROJECT", "LOCAL_REGION", "Plan", "PlannedRung", "RecoveryPolicy",
    "Rigging", "Session", "build_filter", "label_value", "resolve_name", "submit",
]
