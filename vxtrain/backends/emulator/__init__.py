"""A local emulator of Vertex AI's ``google.cloud.aiplatform.v1.JobService`` (and of
its PersistentResourceService, Cloud Logging's LoggingServiceV2 and the Cloud Quotas
API, on the same port).

It is a real gRPC server speaking the real protobuf messages, so the
unmodified ``aiplatform_v1.JobServiceClient`` (gRPC transport, a channel to
the emulator's Unix socket in the user's private folder that sends its bearer
token; it listens on ``127.0.0.1:PORT`` too) talks to it as it would to Vertex AI. It
implements Create/Get/List/Cancel/Delete for CustomJob and
HyperparameterTuningJob; every other JobService method answers UNIMPLEMENTED.

Where each part lives:

* :mod:`~vxtrain.backends.emulator.server`: ``start_emulator``, binding the
  port, the services served on it, the handle that stops it all;
* :mod:`~vxtrain.backends.emulator.rest`: the same services over HTTP/1.1 JSON
  (``--http-port``), routed by each RPC's ``google.api.http`` rule from the
  client libraries, for gcloud, curl and the REST transport;
* :mod:`~vxtrain.backends.emulator.jobservice`: the gRPC JobService methods;
* :mod:`~vxtrain.backends.emulator.store`: the job store, decimal job ids and
  ``projects/P/locations/L/customJobs/ID`` names, the state walk QUEUED →
  PENDING → RUNNING → SUCCEEDED / FAILED / CANCELLED, one thread per job;
* :mod:`~vxtrain.backends.emulator.runs`: what a job's thread runs, with the
  local runner (``vxtrain.runtime.runner``), or on a timer when started with
  ``simulate_seconds``;
* :mod:`~vxtrain.backends.emulator.logging_service`: Cloud Logging's
  LoggingServiceV2 (ListLogEntries) over every line the jobs print, shaped as
  Vertex AI writes them, so google-cloud-logging reads a local job's logs;
* :mod:`~vxtrain.backends.emulator.persistent_resources`: PersistentResourceService
  (Create and Delete as done long-running operations, Get, List) over the
  emulator's resources, so ``submit`` checks a job against a resource the real
  ``PersistentResourceServiceClient`` created;
* :mod:`~vxtrain.backends.emulator.quotas`: the Cloud Quotas API (ListQuotaInfos,
  GetQuotaInfo) over the limits given (``--quota METRIC:REGION=N``), which a create
  whose job alone needs more is refused against (RESOURCE_EXHAUSTED, as Vertex AI);
* :mod:`~vxtrain.backends.emulator.checks`: request validation with Vertex-like
  INVALID_ARGUMENT messages ("List of found errors: 1.Field: ...; Message: ...");
* :mod:`~vxtrain.backends.emulator.filters`: the list filter and page tokens;
* :mod:`~vxtrain.backends.emulator.stockouts`: regions without capacity
  (``--stockout``: PENDING, then FAILED with code 8; ``--pending``: PENDING until cancelled);
* :mod:`~vxtrain.backends.emulator.faults`: fault injection (``METHOD:KIND:COUNT``)
  so the client's retry and exactly-once logic can be tested against every
  failure Vertex can produce;
* :mod:`~vxtrain.backends.emulator.auth`: the bearer token every call, gRPC and
  REST, must carry (its file, its check, the interceptor that refuses a call
  UNAUTHENTICATED) and the private socket vxtrain's clients send it through:
  the emulator runs the command of every job it is sent;
* :mod:`~vxtrain.backends.emulator.common`: the error type, the job states and
  message helpers they all share (the job kinds and terminal states are the
  seam's: :mod:`vxtrain.vocab.kinds`).
"""
from __future__ import annotations

from vxtrain.backends.emulator.common import TERMINAL_STATES, RpcError
from vxtrain.backends.emulator.faults import Fault, FaultPlan, faults_from_env, parse_fault, quota_metric
from vxtrain.backends.emulator.filters import parse_filter
from vxtrain.backends.emulator.server import DEFAULT_HOST, DEFAULT_PORT, EmulatorHandle, start_emulator
from vxtrain.backends.emulator.store import Emulator
from vxtrain.vocab.kinds import CUSTOM, KINDS, TUNING, JobKind

__all__ = [
    "CUSTOM", "DEFAULT_HOST", "DEFAULT_PORT", "Emulator", "EmulatorHandle", "Fault", "FaultPlan", "JobKind",
    "KINDS", "RpcError", "TERMINAL_STATES", "TUNING", "faults_from_env", "parse_fault", "parse_filter",
    "quota_metric", "start_emulator",
]
