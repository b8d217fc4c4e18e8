"""The lease: with a bucket, one create per key, however many submits race
(docs/submitting.md, "Submitting exactly once").

Before creating, a submit takes ``gs://BUCKET/vxtrain/leases/<project>/<region>/<key>``
(``/rung-N`` after it for a fallback rung) with a create-if-absent precondition
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
said through ``say``, and the submit goes on under the label protocol alone.

It imports google-cloud-storage's retry and google.api_core's exceptions at its top:
vxtrain.submission.jobs imports this module only for a submit that takes a lease (a key
the caller chose, and a bucket), so ``status``, ``wait`` and a submit without a bucket
never load them.
"""
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as gexc
from google.cloud.storage.retry import DEFAULT_RETRY

from vxtrain import errors
from vxtrain.backends.base import JobBackend, JobDict, LocalRun
from vxtrain.packaging.upload import storage_client
from vxtrain.submission.create import Created, create_once, elect, find_labelled
from vxtrain.submission.names import LABEL_KEY, label_value
from vxtrain.submission.retry import Backoff, retrying
from vxtrain.vocab.callbacks import Say
from vxtrain.vocab.kinds import kind_of_job, kind_of_name
from vxtrain.vocab.timestamps import format_time

if TYPE_CHECKING:
    from google.cloud.storage import Bucket, Client

#: Where the leases live in the bucket.
LEASE_PREFIX = "vxtrain/leases"


def lease_path(parent: str, key: str, labels: Mapping[str, str] | None = None) -> str:
    """``vxtrain/leases/<project>/<region>/<key>`` (the key as its label value), then
    ``/<label>-<value>`` for each further label that names the job (a fallback rung)."""
    project, region = parent.split("/")[1], parent.split("/")[3]
    extra = "".join(f"/{k.replace('vxtrain_', '')}-{v}" for k, v in sorted((labels or {}).items()))
    return f"{LEASE_PREFIX}/{project}/{region}/{label_value(key)}{extra}"


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


def create_leased(backend: JobBackend, job: JobDict, *, parent: str, key: str, bucket: str,
                  backoff: Backoff, say: Say, local: LocalRun | None = None,
                  labels: Mapping[str, str] | None = None) -> Created:
    """``job`` created once for ``key`` under the lease in ``bucket`` (see the module
    docstring), or the job the lease's holder created, adopted; the label protocol alone
    when the lease cannot be used."""
    try:
        client = storage_client(parent.split("/")[1], purpose="take the submit's lease")
    except errors.ApiError as exc:
        say(f"warning: no lease in gs://{bucket} ({exc}); submitting under the label protocol alone")
        return create_once(backend, job, parent=parent, key=key, backoff=backoff, say=say, local=local,
                           labels=labels)
    try:
        lease = _Lease(client.bucket(bucket), lease_path(parent, key, labels),
                       f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}",
                       retry=_storage_retry(backoff))
        return _Leased(backend, job, parent, key, lease, backoff, say, local, labels).run()
    finally:
        client.close()


def _storage_retry(backoff: Backoff) -> Any:
    """The storage library's retry, bounded by the backoff's deadline (at most 60 s; the
    library's own is 120 s): unreachable storage leaves the lease soon, not minutes later."""
    return DEFAULT_RETRY.with_timeout(min(backoff.deadline or 60.0, 60.0))


class _Leased:
    """One submit under a lease: take it and create, or wait for its holder's job."""

    def __init__(self, backend: JobBackend, job: JobDict, parent: str, key: str, lease: _Lease,
                 backoff: Backoff, say: Say, local: LocalRun | None,
                 labels: Mapping[str, str] | None) -> None:
        self.backend, self.job, self.parent, self.key, self.lease = backend, job, parent, key, lease
        self.backoff, self.say, self.local, self.labels = backoff, say, local, labels
        self.kind = kind_of_job(job)
        self.uri = f"gs://{lease.bucket.name}/{lease.path}"

    def run(self) -> Created:

        try:
            if self._take(0):
                return self._hold()
            return self._wait()
        except (gexc.GoogleAPICallError, gexc.RetryError, OSError) as exc:  # storage refused or unreachable
            if self.lease.generation:
                self._release()
            self.say(f"warning: the lease {self.uri} cannot be used ({exc}); submitting under the "
                     "label protocol alone")
            return create_once(self.backend, self.job, parent=self.parent, key=self.key, backoff=self.backoff,
                               say=self.say, local=self.local, labels=self.labels)

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
        label = label_value(self.key)
        named = False
        try:
            existing = retrying(lambda: find_labelled(self.backend, self.kind, self.parent, label, self.labels),
                                self.backoff, f"list jobs labelled {LABEL_KEY}={label}", self.say)
            if existing is not None:
                made = elect(self.backend, self.kind, self.parent, label, existing, adopted=True,
                             backoff=self.backoff, say=self.say, extra=self.labels)
            else:
                made = create_once(self.backend, self.job, parent=self.parent, key=self.key, backoff=self.backoff,
                                   say=self.say, local=self.local, labels=self.labels)
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
            self.say(f"the lease {self.uri} was taken over while {name} was being created (it had "
                     "expired): the label protocol keeps the key's oldest job")
            self.lease.generation = 0  # not ours to release any more
        except (gexc.GoogleAPICallError, gexc.RetryError, OSError) as exc:
            self.say(f"warning: could not write {name} into the lease {self.uri} ({exc}); the others "
                     "adopt it by its label once the lease expires")

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
        expiry = lease_seconds(self.backoff)
        interval = min(self.backoff.maximum, max(self.backoff.initial * 4, 0.2))
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
                self.say(f"the lease {self.uri} is held by another submit with this key ({data.get('holder')}): "
                         f"waiting for its job (it expires after {expiry:.0f} s without one)")
                said = True
            if time.monotonic() - watched[1] >= expiry:
                taken = self._take_over(generation)
                if isinstance(taken, Created):
                    return taken
                if taken:
                    return self._hold()
                watched = None
                continue
            time.sleep(interval)

    def _take_over(self, generation: int) -> Created | bool:
        """The lease at ``generation`` expired: the job the key labels, adopted, if there is one;
        else whether this submit took the lease over (conditional on ``generation``)."""
        label = label_value(self.key)
        existing = retrying(lambda: find_labelled(self.backend, self.kind, self.parent, label, self.labels),
                            self.backoff, f"list jobs labelled {LABEL_KEY}={label}", self.say)
        if existing is not None:
            return elect(self.backend, self.kind, self.parent, label, existing, adopted=True,
                         backoff=self.backoff, say=self.say, extra=self.labels)
        self.say(f"the lease {self.uri} expired and no job carries {LABEL_KEY}={label}: taking it over")
        return self._take(generation)

    def _adopt(self, name: str) -> Created:
        """The job the lease names, adopted (its key listed once more: vxtrain.submission.create.elect)."""
        kind = kind_of_name(name)
        found: JobDict = retrying(lambda: self.backend.get(kind, name), self.backoff, f"get {name}", self.say)
        return elect(self.backend, kind, self.parent, label_value(self.key), found, adopted=True,
                     backoff=self.backoff, say=self.say, extra=self.labels)
