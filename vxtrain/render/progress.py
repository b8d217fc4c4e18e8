"""A followed job on stderr: its state changes, its log lines (a colour per replica on
a terminal), the last lines of the replica that failed, and vxtrain's own lines
(retries, notices: what the ``vxtrain.submission`` logger is told, shown by
``reporting``). What vxtrain.submission reports (vxtrain.submission.events), shown for
people: commands pass these in.

``stderr_progress`` picks the display: a live status line with rich on a terminal
(``RichProgress``), plain lines otherwise (``PlainProgress``).
"""
from __future__ import annotations

import collections
import logging
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from vxtrain import slots
from vxtrain.joblogs import Entry
from vxtrain.submission import JobView
from vxtrain.vocab.kinds import FAILED_STATES

#: The logger whose lines ``reporting`` shows: vxtrain's own (submission's, the images', the packages').
LOGGER = "vxtrain"


def say(line: str) -> None:
    """vxtrain's own line on stderr as it happens (a retry, a notice): ``vxtrain: LINE``."""
    sys.stderr.write(f"vxtrain: {line}\n")
    sys.stderr.flush()


class _Say(logging.Handler):
    """Each record of the ``vxtrain`` logger as ``say`` writes a line."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            say(record.getMessage())
        except Exception:  # noqa: BLE001 - logging's rule: a handler never raises
            self.handleError(record)


@contextmanager
def reporting() -> Iterator[None]:
    """While the block runs, what the ``vxtrain`` logger is told (WARNING and up) is shown on
    stderr as ``vxtrain: LINE``, as it happens: a command's own reports (retries, notices)."""
    logger = logging.getLogger(LOGGER)
    handler = _Say(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


#: Lines of each replica kept for the tail shown when a job fails.
TAIL_LINES = 10


class _Tails:
    """The last lines of each replica of the job followed now, for the tail of the one that
    failed: a new job (the next rung, the next attempt) starts afresh, so a tail never mixes
    the lines of two jobs' replicas of the same name."""

    def __init__(self) -> None:
        self.tails: dict[str, collections.deque[str]] = {}
        self.job: str | None = None  # whose lines the tails are

    def following(self, view: JobView) -> None:
        """The job each poll is about: its replicas' lines from now on."""
        if view.name != self.job:
            self.job, self.tails = view.name, {}

    def keep(self, entries: list[Entry]) -> None:
        """Remember the last ``TAIL_LINES`` lines of each replica."""
        for entry in entries:
            self.tails.setdefault(entry.replica, collections.deque(maxlen=TAIL_LINES)).append(entry.text)

    def failure_tail(self, view: Mapping[str, Any]) -> tuple[str, list[str]] | None:
        """(replica, its last lines) for a failed job whose error names a replica
        ("The replica workerpool0-0 exited with a non-zero status of 1."), when they are that
        job's lines, else None."""
        message = (view.get("error") or {}).get("message") or ""
        found = slots.REPLICA_NAME.search(message)
        if view.get("state") not in FAILED_STATES or not found or not self.tails.get(found.group(0)):
            return None
        if self.job is not None and view.get("name") != self.job:
            return None
        return found.group(0), list(self.tails[found.group(0)])


class PlainProgress(_Tails):
    """One line per state change, and the job's log lines, on a stream that is not a terminal."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__()
        self.stream = stream or sys.stderr
        self.state: str | None = None

    def __call__(self, view: JobView, elapsed: float) -> None:
        self.following(view)
        if view.state.value != self.state:
            self.state = view.state.value
            self.stream.write(f"vxtrain: {view.name}: {self.state} after {elapsed:.1f} s\n")
            self.stream.flush()

    def log(self, entries: list[Entry]) -> None:
        """``[workerpoolK-I] text`` lines (a LogSink)."""
        self.keep(entries)
        self.stream.write("".join(entry.line() + "\n" for entry in entries))
        self.stream.flush()

    def say(self, text: str) -> None:
        """One line of vxtrain's own."""
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Nothing to release."""


#: Replica prefixes on a terminal: one colour per replica, in the order they first speak.
_COLOURS = ("cyan", "magenta", "green", "yellow", "blue", "bright_red", "bright_cyan", "bright_magenta")


class RichProgress(_Tails):
    """A live status line (spinner, state, elapsed time) on a terminal; state changes
    and the job's log lines (a colour per replica) as lines above it."""

    def __init__(self) -> None:
        super().__init__()
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                 TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        self.task = self.progress.add_task("submitting", total=None)
        self.state: str | None = None
        self.colours: dict[str, str] = {}
        self.progress.start()

    def __call__(self, view: JobView, elapsed: float) -> None:
        self.following(view)
        short = view.name.rsplit("/", 1)[-1]
        self.progress.update(self.task, description=f"{short}: {view.state.value}")
        if view.state.value != self.state:
            self.state = view.state.value
            self.progress.console.print(f"{view.name}: {self.state} after {elapsed:.1f} s",
                                        highlight=False)

    def log(self, entries: list[Entry]) -> None:
        """``[workerpoolK-I] text`` lines, the prefix in the replica's colour (a LogSink)."""
        self.keep(entries)
        for entry in entries:
            colour = self.colours.setdefault(entry.replica, _COLOURS[len(self.colours) % len(_COLOURS)])
            self.progress.console.print(Text.assemble((f"[{entry.replica}]", colour), " ", entry.text),
                                        highlight=False, soft_wrap=True)

    def say(self, text: str) -> None:
        """One line of vxtrain's own."""
        self.progress.console.print(Text(text), highlight=False, soft_wrap=True)

    def close(self) -> None:
        """Stop the live display."""
        self.progress.stop()


#: What ``stderr_progress`` gives: a ProgressFn with ``log`` (a LogSink), ``say`` and ``failure_tail``.
Reporter = PlainProgress | RichProgress


@contextmanager
def stderr_progress() -> Iterator[Reporter]:
    """A progress callback for a followed job (``Session.wait``, a submit's watch): rich on a terminal, plain lines otherwise."""
    reporter: Reporter = RichProgress() if sys.stderr.isatty() else PlainProgress()
    try:
        yield reporter
    finally:
        reporter.close()
