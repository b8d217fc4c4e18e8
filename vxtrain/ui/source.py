"""What the ui's pages show, read from the Job API through one session.

The jobs table is the ledger (vxtrain.submission.ledger: the ``vxtrain jobs`` records),
read at most once per :attr:`Source.max_age` whoever asks: the page and every open tab's
refresh share one read, so the List calls per minute stay the ledger's per region and kind,
not one series per tab. One job's page reads the job itself (one Get: its state now) and
its key's other jobs (the ledger of that key, in the ui's regions and the job's own).

Spec files for the plan page are looked for under the folder the ui was started in
(:func:`spec_path`: nothing outside it, no ``..``), and listed with a bounded walk
(:func:`spec_files`): the ui may be started in a home folder.
"""
from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from vxtrain import errors
from vxtrain.backends.base import JobDict
from vxtrain.formats import gcloud
from vxtrain.submission import Session
from vxtrain.submission.ledger import KeyJobs, Ledger, LedgerJob, Query, ledger_job, read
from vxtrain.submission.names import split_name

#: How often an open jobs page refreshes: an emulator's jobs take seconds, Vertex AI's
#: minutes (each refresh of a Vertex AI page is one List series per region and kind).
EMULATOR_REFRESH_S = 2.0
VERTEX_REFRESH_S = 15.0
#: The fields of a job the server sets (REST "Output only"), left out of "the job as sent": a
#: CustomJob's (formats.gcloud.OUTPUT_ONLY) and a HyperparameterTuningJob's ``trials``
#: (https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.hyperparameterTuningJobs,
#: read 2026-11-29).
OUTPUT_ONLY = gcloud.OUTPUT_ONLY | {"trials"}
#: The spec files the plan page lists at most, and the folders it opens looking for them.
MAX_SPECS, MAX_FOLDERS = 200, 2000
#: Folders never walked for specs (as vxtrain validate DIR leaves them out: vxtrain.bulk).
SKIPPED = frozenset({"node_modules", "__pycache__", "site-packages"})
SPEC_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class JobPage:
    """One job's page: the job (``job``: as its Get gave it, priced), its key's jobs
    (None: it carries no key), and the job as the API returned it (``raw``)."""

    job: LedgerJob
    key: KeyJobs | None
    raw: JobDict

    @property
    def sent(self) -> dict[str, Any]:
        """The job as sent: the API's document without the fields the server sets."""
        return {name: value for name, value in self.raw.items() if name not in OUTPUT_ONLY}


@dataclass
class Source:
    """The ui's reader: ``session`` (one target, its backends kept open), ``query`` (the
    project, regions and time the jobs table lists), ``refresh_s`` (how often a page asks
    again; the ledger is read at most every half of it)."""

    session: Session
    query: Query
    refresh_s: float
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _ledger: Ledger | None = field(default=None, repr=False)
    _read_at: float = field(default=0.0, repr=False)

    @classmethod
    def of(cls, session: Session, query: Query) -> Source:
        """A source refreshing at the target's pace."""
        return cls(session, query, EMULATOR_REFRESH_S if session.emulated else VERTEX_REFRESH_S)

    @property
    def max_age(self) -> float:
        """How old a ledger read may be and still be shown."""
        return self.refresh_s / 2

    def ledger(self) -> Ledger:
        """The jobs table's ledger: the last read when it is fresh enough, else a new one (one
        read at a time: a request arriving meanwhile waits for it and shares it)."""
        with self._lock:
            if self._ledger is None or time.monotonic() - self._read_at > self.max_age:
                self._ledger = read(self.session, self.query)
                self._read_at = time.monotonic()
            return self._ledger

    def job_page(self, name: str) -> JobPage:
        """The page of the job ``name`` (a full resource name; UsageError otherwise)."""
        project, region, _, _ = split_name(name)
        raw = self.session.fetch(name)
        now = datetime.now(timezone.utc)
        job = ledger_job(raw, region, now, emulated=self.session.emulated)
        if job.key is None:
            return JobPage(job, None, raw)
        regions = tuple(dict.fromkeys((region, *self.query.regions)))
        ledger = read(self.session, Query(project, regions, key=job.key), now=now)
        # The job as just read stands for its listed copy (the list may lag the Get by a poll).
        jobs = [job if listed.view.name == name else listed for listed in ledger.jobs]
        if all(listed.view.name != name for listed in jobs):
            jobs.append(job)
        keys = replace(ledger, jobs=tuple(jobs)).keys
        return JobPage(job, next((k for k in keys if k.key == job.key), None), raw)


# --- spec files under the ui's folder --------------------------------------------------

class PathRefused(errors.UsageError):
    """A spec path the plan page does not open: ``status`` 403 (outside the folder, ``..``)
    or 404 (no such file)."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


def spec_path(root: Path, given: str) -> Path:
    """``given`` (relative to ``root``, or absolute inside it) as a path under ``root``;
    PathRefused for a ``..`` part, a path outside ``root`` (links resolved), or no file."""
    if not given or "\0" in given:
        raise PathRefused("name a spec file under the folder the ui was started in", 404)
    if ".." in PurePosixPath(given.replace("\\", "/")).parts:
        raise PathRefused(f"{given!r}: a path with '..' is refused; name a file under {root}")
    path = Path(given)
    candidate = path if path.is_absolute() else root / path
    try:
        resolved = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        # Said the same way inside and outside the folder: the answer tells nothing of what is outside.
        if not candidate.resolve().is_relative_to(root.resolve()):
            raise PathRefused(f"{given!r} is outside the folder the ui was started in ({root}): refused") from None
        raise PathRefused(f"{given!r}: no such file under {root}", 404) from None
    if not resolved.is_relative_to(root.resolve()):
        raise PathRefused(f"{given!r} is outside the folder the ui was started in ({root}): refused")
    if not resolved.is_file():
        raise PathRefused(f"{given!r} is not a file", 404)
    return candidate


def spec_files(root: Path) -> list[str]:
    """The YAML files under ``root`` (breadth first, hidden folders, virtual envs and
    node_modules left out; at most :data:`MAX_SPECS` of them after at most
    :data:`MAX_FOLDERS` folders), relative to it, sorted."""
    found: list[str] = []
    for path in _walk(root):
        found.append(path.relative_to(root).as_posix())
        if len(found) >= MAX_SPECS:
            break
    return sorted(found)


def _walk(root: Path) -> Iterator[Path]:
    folders, opened = deque([root]), 0
    while folders and opened < MAX_FOLDERS:
        folder = folders.popleft()
        opened += 1
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED and not (Path(entry.path) / "pyvenv.cfg").exists():
                    folders.append(Path(entry.path))
            elif entry.name.endswith(SPEC_SUFFIXES) and entry.is_file():
                yield Path(entry.path)
