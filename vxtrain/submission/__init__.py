"""Submitting and following jobs: the Python API behind ``vxtrain submit``,
``status``, ``wait``, ``cancel``, ``list`` and ``logs``.

Its rooms:

* :mod:`~vxtrain.submission.names`: resource names, parents, the idempotency
  label, the console URL;
* :mod:`~vxtrain.submission.views`: the view of a job that commands print (a
  tuning job's trials and best trial too), and the end states that fail ``wait``;
* :mod:`~vxtrain.submission.retry`: backoffs and ``retrying`` (google.api_core.retry
  on transient errors only, each retry reported);
* :mod:`~vxtrain.submission.create`: creating a job exactly once (docs/submitting.md,
  "Submitting exactly once"), and the label protocol's judgement (``elect``: the key's
  oldest job kept, every other live one cancelled);
* :mod:`~vxtrain.submission.lease`: with a bucket, one create per key however many
  submits race (a lease object taken with ``ifGenerationMatch=0``);
* :mod:`~vxtrain.submission.placement`: a job on a persistent resource checked
  against the resource (exists, RUNNING, pools match, replicas fit) before it is created;
* :mod:`~vxtrain.submission.quota`: the quota preflight, a job's needs against the
  project's limits (Cloud Quotas API) before it is created;
* :mod:`~vxtrain.submission.jobs`: submit, get, wait, cancel, list, and a job's
  log lines (read, or followed while it runs);
* :mod:`~vxtrain.submission.ladder`: a spec's ``fallback:`` ladder, rung after rung,
  moving on only for capacity (quota, stockout, too long pending), resumed by key;
* :mod:`~vxtrain.submission.events`: how it reports what happens (``Say``,
  ``ProgressFn``; vxtrain.joblogs's ``LogSink``), which the command line shows
  through vxtrain.render.progress. Nothing here prints for people.

Calls go through a ``JobBackend`` (vxtrain.backends.base) for a job kind
(vxtrain.vocab.kinds). Nothing here imports google.cloud.aiplatform: the
backend does, when it first talks to an API.
"""
from __future__ import annotations

from vxtrain.backends.base import JobDict
from vxtrain.submission.create import create_once, find_labelled
from vxtrain.submission.events import log_say
from vxtrain.submission.jobs import (
    build_filter, cancel, get, list_jobs, normalize_state, read_logs, submit, wait_job,
)
from vxtrain.submission.placement import check_placement, placement_problems, pool_shape, resource_id_of
from vxtrain.submission.quota import QuotaReport, QuotaRow, check_quota, preflight, quota_parent
from vxtrain.submission.names import (
    CONSOLE_URL, LABEL_KEY, LOCAL_PROJECT, LOCAL_REGION, console_url, label_value, parent_of, resolve_name,
    split_name,
)
from vxtrain.submission.retry import LOCAL_POLL, LOCAL_RETRY, VERTEX_POLL, VERTEX_RETRY, Backoff, retrying
from vxtrain.submission.views import job_view, raise_for_state, study_fields, trials_from_json
from vxtrain.vocab.callbacks import ProgressFn, Say
from vxtrain.vocab.kinds import CUSTOM, FAILED_STATES, TERMINAL_STATES, TUNING, JobKind, kind_of_job, kind_of_name

#: ``vxtrain.submission.wait(name)`` reads like the CLI; ``submit(wait=True)`` needs the other name.
wait = wait_job

__all__ = [
    "Backoff", "CONSOLE_URL", "CUSTOM", "FAILED_STATES", "JobDict", "JobKind", "LABEL_KEY",
    "LOCAL_POLL", "LOCAL_PROJECT", "LOCAL_REGION", "LOCAL_RETRY", "ProgressFn", "QuotaReport",
    "QuotaRow", "Say", "TERMINAL_STATES", "TUNING", "VERTEX_POLL", "VERTEX_RETRY", "build_filter",
    "cancel", "check_placement", "check_quota", "console_url", "create_once", "find_labelled",
    "get", "job_view", "kind_of_job", "kind_of_name", "label_value", "list_jobs", "log_say",
    "normalize_state", "parent_of", "placement_problems", "pool_shape", "preflight",
    "quota_parent", "raise_for_state", "read_logs", "resolve_name", "resource_id_of", "retrying",
    "split_name", "study_fields", "submit", "trials_from_json", "wait", "wait_job",
]
