"""The lease: with a bucket, one create per key, however many submits race
(docs/submitting.md, "Submitting exactly once").

Before creating, a submit takes ``gs://BUCKET/vxtrain/leases/<project>/<region>/<key>/<attempt>``
(the recovery attempt's number, 0 for the first; ``/rung-N`` after it for a fallback rung
above 0) with a create-if-absent precondition
(``ifGenerationMatch=0``, https://cloud.google.com/storage/docs/request-preconditions):
Cloud Storage lets one writer make the object, so one submit holds the lease. The holder
lists the key (a job a gone holder made is adopted, not made again), creates exactly once
(vxtrain.submission.create.create_once: the label protocol still guards its own retries),
and writes the job's name into the lease, conditional on the generation it holds. The
others read the lease until it names the job, and adopt it. A lease that names no job
and stays unchanged for ``lease_seconds`` (as the waiter's own clock measures it, so no
two hosts' clocks are compared) is expired: a waiter lists the key, adopts the job it
finds, and only when there is none takes the lease over, conditional on the stale
generation (one waiter wins). A holder whose create fails deletes its lease, so the next
submit need not wait for it to expire.

A lease that cannot be used (the bucket missing, no permission, storage unreachable) is
said (the session's logger), and the submit goes on under the label protocol alone.

It imports google-cloud-storage's retry and google.api_core's exceptions at its top:
vxtrain.submission.carry imports this module only for a submit that takes a lease (a key
the caller chose, and a bucket), so ``status``, ``wait`` and a submit without a bucket
never load them.
"""
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as gexc
from google.cloud.storage.retry import DEFAULT_RETRY

from vxtrain import errors
from vxtrain.backends.base import JobDict
from vxtrain.model import ATTEMPT_LABEL, RUNG_LABEL
from vxtrain.packaging.upload import storage_client
from vxtrain.submission.create import Created, Request, create_once, elect, oldest
from vxtrain.submission.names import LABEL_KEY
from vxtrain.submission.retry import Backoff
from vxtrain.submission.session import Session
from vxtrain.vocab.timestamps import format_time

if TYPE_CHECKING:
    from google.cloud.storage import Bucket, Client

#: Where the leases live in the bucket.
LEASE_PREFIX = "vxtrain/leases"


def lease_path(request: Request) -> str:
    """``vxtrain/leases/<project>/<region>/<key>/<attempt>`` (the key as its label value; the
    attempt 0 without recovery), then ``/rung-N`` for a fallback rung above 0."""
    project, region = request.parent.split("/")[1], request.parent.split("/")[3]
    rung = request.labels.get(RUNG_LABEL, "0")
    tail = f"/rung-{rung}" if rung != "0" else ""
    return f"{LEASE_PREFIX}/{project}/{region}/{request.label}/{request.labels.get(ATTEMPT_LABEL, '0')}{tail}"


def lease_seconds(backoff: Backoff) -> float:
    """How long a lease without a job's name holds: the backoff's ``lease``, else the whole
    of a retried create (its deadline) and its late-commit grace, plus 10 s."""
    if backoff.lease is not None:
        return backoff.lease
    return (backoff.deadline or 300.0) + backoff.commit_grace + 10.0


@dataclass
class _Lease:
    """One lease object as this submit sees it; ``retry``: the storage calls' retry, bounded
    (every call is conditional on a generation, so retrying one is safe)."""

    bucket: Bucket
    path: str
    holder: str
    retry: Any = None
    generation: int = 0  # the generation this submit holds (0: it holds none)

    def body(self, key: str, name: str | None = None) -> str:
        taken = format_time(datetime.now(timezone.utc))  # for people reading the bucket: never compared
        return json.dumps({"key": key, "holder": self.holder, "taken": taken, "name": name})


def create_leased(session: Session, request: Request, bucket: str) -> Created:
    """The request's job created once under the lease in ``bucket`` (see the module
    docstring), or the job the lease's holder created, adopted; the label protocol alone
    when the lease cannot be used."""
    project = request.parent.split("/")[1]
    try:
        client = storage_client(project, purpose="take the submit's lease")
    except errors.ApiError as exc:
        session.log.warning("warning: no lease in gs://%s (%s); submitting under the label protocol alone",
                            bucket, exc)
        return create_once(session, request)
    try:
        lease = _Lease(client.bucket(bucket), lease_path(request),
                       f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}",
                       retry=_storage_retry(session.retry_policy))
        return _Leased(session, request, lease).run()
    finally:
        client.close()


def _storage_retry(backoff: Backoff) -> Any:
    """The storage library's retry, bounded by the backoff's deadline (at most 60 s; the
    library's own is 120 s): unreachable storage leaves the lease soon, not minutes later."""
    return DEFAULT_RETRY.with_timeout(min(backoff.deadline or 60.0, 60.0))


class _Leased:
    """One submit under a lease: take it and create, or wait for its holder's job."""

    def __init__(self, session: Session, request: Request, lease: _Lease) -> None:
        self.session, self.request, self.lease = session, request, lease
        self.key = request.key
        self.uri = f"gs://{lease.bucket.name}/{lease.path}"

    def run(self) -> Created:
        try:
            if self._take(0):
                return self._hold()
            return self._wait()
        except (gexc.GoogleAPICallError, gexc.RetryError, OSError) as exc:  # storage refused or unreachable
            if self.lease.generation:
                self._release()
            self.session.log.warning("warning: the lease %s cannot be used (%s); submitting under the "
                                     "label protocol alone", self.uri, exc)
            return create_once(self.session, self.request)

    def _take(self, generation: int) -> bool:
        """Write the lease if its generation is still ``generation`` (0: it does not exist);
        whether this submit now holds it."""

        blob = self.lease.bucket.blob(self.lease.path)
        try:
            blob.upload_from_string(self.lease.body(self.key), content_type="application/json",
                                    if_generation_match=generation, retry=self.lease.retry)
        except gexc.PreconditionFailed:
            # Another submit holds it, or this one's first try went through and its retry was
            # refused: the holder written in it says which.
            seen = self._read()
            if seen is None or seen[1].get("holder") != self.lease.holder:
                return False
            self.lease.generation = seen[0]
            return True
        self.lease.generation = int(blob.generation or 0)
        return True

    def _read(self) -> tuple[int, dict[str, Any]] | None:
        """The lease's generation and content, or None when there is none (or it is unreadable)."""

        blob = self.lease.bucket.get_blob(self.lease.path, retry=self.lease.retry)
        if blob is None:
            return None
        generation = int(blob.generation or 0)
        try:
            data = json.loads(blob.download_as_bytes(if_generation_match=generation, retry=self.lease.retry))
        except (gexc.PreconditionFailed, gexc.NotFound):  # rewritten or deleted meanwhile: read again
            return self._read()
        except ValueError:
            data = {}  # not a lease vxtrain wrote: treated as one without a job, which expires
        return generation, data if isinstance(data, dict) else {}

    def _hold(self) -> Created:
        """The holder: adopt the job the key already labels (a gone holder made it), else
        create once; write its name into the lease. A create that fails releases the lease."""
        named = False
        try:
            existing = self._existing()
            if existing is not None:
                made = elect(self.session, self.request, existing, adopted=True)
            else:
                made = create_once(self.session, self.request)
            self._name(str(made.job.get("name")))
            named = True
            return made
        finally:
            if not named:
                self._release()

    def _name(self, name: str) -> None:
        """Write the job's name into the lease this submit holds (a lease taken over meanwhile,
        or a write that fails, is said: the label protocol still keeps one job)."""

        try:
            self.lease.bucket.blob(self.lease.path).upload_from_string(
                self.lease.body(self.key, name), content_type="application/json",
                if_generation_match=self.lease.generation, retry=self.lease.retry)
        except gexc.PreconditionFailed:
            self.session.log.warning("the lease %s was taken over while %s was being created (it had "
                                     "expired): the label protocol keeps the key's oldest job", self.uri, name)
            self.lease.generation = 0  # not ours to release any more
        except (gexc.GoogleAPICallError, gexc.RetryError, OSError) as exc:
            self.session.log.warning("warning: could not write %s into the lease %s (%s); the others adopt it "
                                     "by its label once the lease expires", name, self.uri, exc)

    def _release(self) -> None:
        """Delete the lease this submit holds, so the next submit need not wait for it to expire."""

        if not self.lease.generation:
            return
        try:
            self.lease.bucket.blob(self.lease.path).delete(if_generation_match=self.lease.generation,
                                                           retry=self.lease.retry)
        except (gexc.GoogleAPICallError, gexc.RetryError, OSError):
            pass  # taken over, or unreachable: it expires
        self.lease.generation = 0

    def _wait(self) -> Created:
        """Read the lease until it names the job, and adopt that job. A lease that is gone is
        taken; one unchanged without a name for ``lease_seconds`` is expired: the key is
        listed, its job adopted, and only when there is none is the lease taken over."""
        policy = self.session.retry_policy
        expiry = lease_seconds(policy)
        interval = min(policy.maximum, max(policy.initial * 4, 0.2))
        watched: tuple[int, float] | None = None  # the generation seen, since when (monotonic)
        said = False
        while True:
            seen = self._read()
            if seen is None:
                if self._take(0):
                    return self._hold()
                continue
            generation, data = seen
            if data.get("name"):
                return self._adopt(str(data["name"]))
            if watched is None or watched[0] != generation:
                watched = (generation, time.monotonic())
            if not said:
                self.session.log.warning("the lease %s is held by another submit with this key (%s): waiting "
                                         "for its job (it expires after %.0f s without one)", self.uri,
                                         data.get("holder"), expiry)
                said = True
            if time.monotonic() - watched[1] >= expiry:
                existing = self._existing()
                if existing is not None:  # its holder made the job, and did not name it
                    return elect(self.session, self.request, existing, adopted=True)
                self.session.log.warning("the lease %s expired and no job carries %s=%s: taking it over",
                                         self.uri, LABEL_KEY, self.request.label)
                if self._take(generation):
                    return self._hold()
                watched = None
                continue
            time.sleep(interval)

    def _existing(self) -> JobDict | None:
        """The oldest job of the request's labels, or None."""
        label = f"{LABEL_KEY}={self.request.label}"
        return oldest(self.session.call(lambda: self.request.jobs(self.session), f"list jobs labelled {label}"))

    def _adopt(self, name: str) -> Created:
        """The job the lease names, adopted (its labels listed once more: vxtrain.submission.create.elect)."""
        return elect(self.session, self.request, self.session.fetch(name), adopted=True)
