"""The plan kept where the key's state lives: ``gs://BUCKET/vxtrain/plans/<project>/<region>/<key>.json``.

A submit with a key the caller chose and a staging bucket writes the key's plan before its
first create, create-if-absent (``ifGenerationMatch=0``,
https://cloud.google.com/storage/docs/request-preconditions): the first writer's plan is
the key's. A re-run reads it back; a different spec under the key (another SHA-256 of the
job as sent) is refused (exit 1, both hashes named). When the life ends, its watcher (or a
``vxtrain reconcile`` pass) writes ``finished`` into it, conditional on the generation it
read, and nothing is created for the key after that. ``reconcile`` lists the plans that
have not finished. Plans live at the bucket's root beside the leases (a staging bucket's
prefix is where packages go, not the plans).

A bucket that cannot be used (missing, no permission, storage unreachable) is a warning on
the session's logger; the submit goes on without a stored plan (its watcher alone carries
the life). It imports google-cloud-storage at its top: only a submit with a chosen key and a
bucket, and ``reconcile``, load it.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as gexc
from google.cloud.storage.retry import DEFAULT_RETRY

from vxtrain import errors
from vxtrain.packaging.upload import storage_client
from vxtrain.submission.names import label_value
from vxtrain.submission.plan import Finished, Plan
from vxtrain.submission.session import Session
from vxtrain.vocab.timestamps import format_time

if TYPE_CHECKING:
    from google.cloud.storage import Bucket

#: Where the plans live in the bucket.
PLAN_PREFIX = "vxtrain/plans"
#: What a storage call may raise when the bucket cannot be used.
UNUSABLE = (gexc.GoogleAPICallError, gexc.RetryError, OSError, errors.ApiError)


def plan_path(project: str, region: str, key: str) -> str:
    """``vxtrain/plans/<project>/<region>/<key>.json`` (the key as its label value)."""
    return f"{PLAN_PREFIX}/{project}/{region}/{label_value(key)}.json"


@dataclass(frozen=True)
class Kept:
    """A plan as the bucket holds it: the plan, its object's generation, the bucket's name."""

    plan: Plan
    generation: int
    bucket: str


@dataclass(frozen=True)
class _Store:
    """One bucket through one storage client; its calls retried as the session's policy bounds
    them (at most 60 s; the library's own is 120 s), so an unreachable store costs a submit
    seconds, not minutes."""

    handle: Bucket
    name: str
    retry: Any


@contextmanager
def _store(session: Session, project: str | None, bucket: str) -> Iterator[_Store]:
    client = storage_client(project, purpose="keep the job's plan")
    try:
        yield _Store(client.bucket(bucket), bucket,
                     DEFAULT_RETRY.with_timeout(min(session.retry_policy.deadline or 60.0, 60.0)))
    finally:
        client.close()


def keep(session: Session, plan: Plan, bucket: str) -> Kept | None:
    """Write ``plan`` to ``bucket`` if no plan of its key is there; the plan the bucket keeps
    (this one, or the first writer's). SpecChanged when the kept plan is of another spec;
    None (said) when the bucket cannot be used."""
    try:
        with _store(session, plan.project, bucket) as store:
            return _keep(store, _dated(plan))
    except UNUSABLE as exc:
        session.log.warning("warning: the plan of key %s cannot be kept in gs://%s (%s): only this submit, "
                            "while it follows the job, carries it", plan.key, bucket, exc)
        return None


def _dated(plan: Plan) -> Plan:
    """``plan`` with the time it is first kept."""
    return replace(plan, created=plan.created or format_time(datetime.now(timezone.utc)))


def _keep(store: _Store, plan: Plan) -> Kept:
    path = plan_path(plan.project, plan.region, plan.key)
    blob = store.handle.blob(path)
    try:
        blob.upload_from_string(json.dumps(plan.to_json()), content_type="application/json",
                                if_generation_match=0, retry=store.retry)
        return Kept(plan, int(blob.generation or 0), store.name)
    except gexc.PreconditionFailed:
        pass  # the key has a plan: the first writer's (or this one's first try, whose answer was lost)
    kept = _read(store, path)
    if kept is None:
        return _keep(store, plan)  # deleted meanwhile
    if kept.plan.spec_sha256 != plan.spec_sha256:
        raise errors.SpecChanged(
            f"the key {plan.key} is in use by another spec: its plan in gs://{store.name}/{path} has spec_sha256 "
            f"{kept.plan.spec_sha256}, this submit's job as sent has {plan.spec_sha256}; attempts of one key run "
            "the same job: submit the same spec with the same options (-f, --set, --var, --project, --region, "
            "--display-name), or choose another --idempotency-key")
    return kept


def _read(store: _Store, path: str) -> Kept | None:
    """The plan at ``path``, or None when there is none (or it is not one vxtrain wrote)."""
    blob = store.handle.get_blob(path, retry=store.retry)
    if blob is None:
        return None
    generation = int(blob.generation or 0)
    try:
        data = json.loads(blob.download_as_bytes(if_generation_match=generation, retry=store.retry))
        return Kept(Plan.from_json(data), generation, store.name)
    except (gexc.PreconditionFailed, gexc.NotFound):  # rewritten or deleted meanwhile: read again
        return _read(store, path)
    except ValueError:
        return None


def finish(session: Session, kept: Kept, finished: Finished) -> Kept:
    """Write ``finished`` into the kept plan, conditional on the generation read (a plan another
    watcher finished first stays as that one wrote it); said, not raised, when it cannot be."""
    plan = kept.plan
    if plan.finished is not None:
        return kept
    ended = plan.ended(finished)
    try:
        with _store(session, plan.project, kept.bucket) as store:
            blob = store.handle.blob(plan_path(plan.project, plan.region, plan.key))
            blob.upload_from_string(json.dumps(ended.to_json()), content_type="application/json",
                                    if_generation_match=kept.generation, retry=store.retry)
            return Kept(ended, int(blob.generation or 0), kept.bucket)
    except gexc.PreconditionFailed:
        return kept  # another watcher wrote it first
    except UNUSABLE as exc:
        session.log.warning("warning: could not write the end of key %s into its plan in gs://%s (%s)",
                            plan.key, kept.bucket, exc)
        return kept


def unfinished(session: Session, bucket: str, project: str | None = None) -> list[Kept]:
    """Every plan under ``bucket`` (of ``project``) that has not finished."""
    with _store(session, project, bucket) as store:
        prefix = f"{PLAN_PREFIX}/{project}/" if project else f"{PLAN_PREFIX}/"
        names = [b.name for b in store.handle.client.list_blobs(store.handle, prefix=prefix, retry=store.retry)
                 if b.name.endswith(".json")]
        plans = [_read(store, name) for name in names]
    return [kept for kept in plans if kept is not None and kept.plan.finished is None]


def objects(session: Session, bucket: str, prefix: str) -> list[bytes]:
    """The contents of every object under ``prefix`` in ``bucket`` (the leases of a key)."""
    with _store(session, None, bucket) as store:
        blobs = list(store.handle.client.list_blobs(store.handle, prefix=prefix, retry=store.retry))
        return [blob.download_as_bytes(retry=store.retry) for blob in blobs]
