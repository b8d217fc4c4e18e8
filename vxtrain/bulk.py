"""Checking many spec files at once (``vxtrain validate DIR``): finding them under
folders, and checking them across forked worker processes.

``spec_files`` walks folders the way a project expects (hidden folders, virtual envs and
node_modules left out); ``check_all`` runs the check pipeline (vxtrain.pipeline) on each
file, spread over processes on a multi-core machine, and keeps of each only its
diagnostics. The results are the same, in the same order, however many processes ran.
"""
from __future__ import annotations

import gc
import os
import pickle
import signal
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vxtrain.diagnostics import error
from vxtrain.errors import VxtrainError
from vxtrain.options import Options
from vxtrain.pipeline import Result, check_file

# Folders a recursive validate never enters: `vxtrain validate .` in a project must not
# check the YAML of its tools (.git, .github workflows, .pre-commit-config.yaml), of
# its virtual envs (site-packages ship YAML) or of node_modules. Named paths are
# always checked, hidden or not.
_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})
_VENV_MARKER = "pyvenv.cfg"


@dataclass(frozen=True)
class Unlisted:
    """A folder under a named one that could not be listed: the specs in it were not found,
    so not checked. ``check_all`` makes it an error of its own (``folder-unreadable``)."""

    path: Path
    #: Why the listing failed (the OSError's words: "Permission denied").
    reason: str

    def result(self, strict: bool) -> Result:
        """The error that says so, as a Result of its own (exit 1, in text and JSON)."""
        where = str(self.path)
        return Result(file=where, strict=strict, diagnostics=[error(
            "folder-unreadable", f"cannot list the folder {where} ({self.reason}): the specs in it were not "
            "checked; make it readable (r and x) by the user running vxtrain, or name the paths to check one by one", file=where)])


def spec_files(paths: Sequence[str | Path]) -> list[Path]:
    """Files named, and *.yaml / *.yml under folders named (recursively, sorted),
    leaving out hidden files and folders, virtual envs and node_modules (``found``
    without the folders that could not be listed)."""
    return [item for item in found(paths) if isinstance(item, Path)]


def found(paths: Sequence[str | Path]) -> list[Path | Unlisted]:
    """``spec_files``, with each folder under ``paths`` that could not be listed in its place
    (sorted among the files): a folder the walk cannot enter is said, never skipped in silence."""
    out: list[Path | Unlisted] = []
    for raw in paths:
        p = Path(raw)
        out += _sorted(p, _walk_specs(p)) if _is_dir(p) else [p]
    return out


def _is_dir(path: Path) -> bool:
    """Whether ``path`` is a folder; a name no folder can have (a part past 255 bytes) is
    not one, and the loader then says what is wrong with it as a file."""
    try:
        return path.is_dir()
    except OSError:
        return False


def _sorted(root: Path, rels: list[tuple[str, str | None]]) -> list[Path | Unlisted]:
    """``root / rel`` for each spec of ``rels`` (an Unlisted for each folder with a reason),
    in the order of the Paths."""
    if os.sep == "/":  # POSIX Paths compare part by part, case and all: the same order, ~10x faster
        ordered = sorted(rels, key=lambda item: item[0].split("/"))
    else:
        ordered = sorted(rels, key=lambda item: Path(root / item[0]))
    return [root / rel if reason is None else Unlisted(root / rel if rel else root, reason)
            for rel, reason in ordered]


def _walk_specs(root: Path) -> list[tuple[str, str | None]]:
    """Spec files under ``root`` as paths relative to it (bulk validation walks
    thousands: plain strings and scandir's entries, no stat per file), each with None;
    a folder that could not be listed, with why ("" for ``root`` itself).

    A *.yaml entry that is not a folder is a spec, whatever else it is: a FIFO, a
    socket or a dangling link is then refused by the read, with the reason, not
    left out without a word.
    """
    found: list[tuple[str, str | None]] = []
    todo = [""]
    while todo:
        rel = todo.pop()
        try:
            with os.scandir(root / rel if rel else root) as entries:  # symlinked folders not followed
                for entry in entries:
                    _sort_entry(entry, rel, found, todo)
        except OSError as exc:  # os.walk would skip it in silence: a smaller check than asked for
            found.append((rel, exc.strerror or str(exc)))
    return found


def _sort_entry(entry: os.DirEntry[str], rel: str, found: list[tuple[str, str | None]], todo: list[str]) -> None:
    """Put one entry of folder ``rel`` where it belongs: a folder to walk in ``todo``, a spec in ``found``."""
    name = entry.name
    here = f"{rel}/{name}" if rel else name
    if _entry_is_dir(entry):
        if not entry.is_symlink() and not _skipped_dir(Path(entry.path)):
            todo.append(here)
    elif not name.startswith(".") and name.endswith((".yaml", ".yml")):
        found.append((here, None))


def _entry_is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` is a folder (or a link to one); an entry that cannot be stat-ed is not."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _skipped_dir(path: Path) -> bool:
    """Hidden folders, node_modules and virtual envs. A folder that cannot be searched is
    none of these (its pyvenv.cfg cannot be seen): it is walked, and its listing's error said."""
    if path.name.startswith(".") or path.name in _SKIPPED_DIRS:
        return True
    try:
        return (path / _VENV_MARKER).is_file()
    except OSError:  # EACCES on a mode-000 folder: is_file raises, where it returns False for ENOENT
        return False



def check_all(items: Sequence[Path | Unlisted], options: Options) -> list[Result]:
    """Check (and compile) every file of ``items``; one Result per file with its
    diagnostics (per folder that could not be listed, its error), in input order, never
    raising for bad input.

    The Results keep only ``file`` and ``diagnostics`` (``Result.slim``): holding every
    document, model and compiled job of a large tree alive makes Python's garbage
    collector walk them all again and again (bulk validation ran ~2x slower).

    A large batch is spread over worker processes on a multi-core machine
    (``_parallel``); the results are the same, in the same order.
    """
    files = [item for item in items if isinstance(item, Path)]
    workers = _workers(len(files))
    checked = iter(_parallel(files, options, workers) if workers > 1 else
                   [_check_slim(p, options) for p in files])
    return [next(checked) if isinstance(item, Path) else item.result(options.strict) for item in items]


#: Below this many files per worker, forking costs more than it saves.
_FILES_PER_WORKER = 100


def _workers(files: int) -> int:
    """How many processes to check ``files`` files with (1: this one alone).

    Only where ``fork`` exists and this process runs no other thread: a fork
    copies the interpreter as it is (every import already done), where a
    spawned worker would pay the start-up again; forking a threaded process is
    unsafe.
    """
    if files < 2 * _FILES_PER_WORKER or threading.active_count() > 1 or not hasattr(os, "fork"):
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cpus, 8, files // _FILES_PER_WORKER))


def _parallel(files: Sequence[Path], options: Options, workers: int) -> list[Result]:
    """``_check_slim`` over ``files`` in ``workers`` processes (this one and forked
    children), in input order.

    The first file is checked here, before the fork: its lazy imports and
    caches (the pipeline's modules, the compiled schema) are then made once,
    not once per process; ``gc.freeze`` keeps the collector from touching (and
    so copying) the inherited objects in every child. Process k checks files
    k+1, k+1+workers, ...: interleaved, so a folder's big and small specs spread
    evenly. Plain ``os.fork`` and a pipe per child, not a multiprocessing.Pool:
    the Pool's import, queues and threads cost ~25 ms, an eighth of a 1,000-spec
    batch, and this process would only wait while its workers ran.
    """
    first = _check_slim(files[0], options)
    gc.freeze()
    children: list[tuple[int, int]] = []  # (pid, pipe) of those not yet collected
    try:
        for k in range(1, workers):
            children.append(_fork_share(files, options, k, workers))
        shares = [[_check_slim(files[i], options) for i in range(1, len(files), workers)]]
        while children:
            kind, value = _collect(*children[0])
            children.pop(0)  # reaped: never to be signalled again
            if kind == "raised":
                raise value
            shares.append(value)
    finally:
        gc.unfreeze()
        _stop(children)
    # files[j] (j >= 1) is item (j - 1) // workers of share (j - 1) % workers
    return [first] + [shares[(j - 1) % workers][(j - 1) // workers] for j in range(1, len(files))]


def _fork_share(files: Sequence[Path], options: Options, k: int, workers: int) -> tuple[int, int]:
    """A child checking share ``k`` of ``files``: its pid and the pipe its results come
    back on, pickled (an exception it raised comes back instead, to be raised here)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write_fd)
        return pid, read_fd
    code = 1
    try:  # the child: never returns into the caller, whatever happens
        os.close(read_fd)
        try:
            payload: Any = ("ok", [_check_slim(files[i], options) for i in range(1 + k, len(files), workers)])
        except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
            payload = ("raised", exc)
        try:
            data = pickle.dumps(payload, pickle.HIGHEST_PROTOCOL)
        except Exception:  # an exception that does not pickle: its words do
            data = pickle.dumps(("raised", RuntimeError(repr(payload[1]))), pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_fd, "wb") as out:
            out.write(data)
        code = 0
    finally:
        os._exit(code)


def _collect(pid: int, read_fd: int) -> tuple[str, Any]:
    """What the child ``pid`` sent (read to the end of its pipe), once it has ended:
    ``("ok", its results)`` or ``("raised", its exception)``."""
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    if not data:
        return "raised", RuntimeError(f"a bulk-validation worker process (pid {pid}) ended without its results")
    kind, value = pickle.loads(data)
    return kind, value


def _stop(children: list[tuple[int, int]]) -> None:
    """End and reap the children not yet collected (this process was interrupted or raised)."""
    for pid, read_fd in children:
        try:
            os.close(read_fd)
        except OSError:
            pass  # closed by the read that was interrupted
        try:
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
        except OSError:
            pass  # already gone



def _check_slim(path: Path, options: Options) -> Result:
    """One file's check; an error raised on purpose while checking it (a source folder or a
    requirements file that changed under the check, a bad bound in the environment) is that
    file's error, and the other files are checked on."""
    try:
        return check_file(path, options, compile_job=True).slim()
    except VxtrainError as exc:
        code = getattr(exc, "code", None)
        return Result(file=str(path), strict=options.strict,
                      diagnostics=[error(code if isinstance(code, str) else "check-failed", str(exc),
                                         file=str(path))])
