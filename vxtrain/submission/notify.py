"""Notifications: one JSON POST per event of a job's life (``--notify URL``, ``notify: [URL]``).

The body is ``{"text", "event", "job", "attempt", "rung", "state", "cost_usd", "id"}``;
``text`` is one human line, the one key Slack's and Google Chat's incoming webhooks
read: both take a POST of ``{"text": "..."}`` with ``Content-Type: application/json``
(https://api.slack.com/messaging/webhooks;
https://developers.google.com/workspace/chat/quickstart/webhooks; read 2026-11-27).
Google Chat's endpoint is a Google API whose JSON parser refuses a field its Message
has not ("Invalid JSON payload received. Unknown name ...": https://github.com/ansible/awx/issues/4665),
so a ``chat.googleapis.com`` hook gets ``{"text"}`` alone; every other hook gets it all.
``id`` is stable (derived from the key, the attempt and the event), so a receiver drops
the copy a racing watcher, or a re-run, sends of the same event.

A notification is a side channel: it never changes the job, the exit code or the watch,
and never delays a create. ``send`` only queues the event (a bounded queue); one thread
posts them in order, each hook within :data:`DEADLINE` seconds; ``close`` flushes what is
queued within :data:`FLUSH` seconds in all. A POST is tried again only where the request
cannot have been processed: the connection was refused or the host did not resolve
(nothing was sent), or the hook answered 429 (it says it did not take it). A timeout, a
reset or a 5xx may have been processed: a second POST could be a second message, so it
is one warning instead. A hook's URL is a secret (Slack's path is its token): a warning
names its scheme and host only.
"""
from __future__ import annotations

import hashlib
import json
import logging
import queue
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypedDict, get_args
from urllib.parse import urlsplit


__all__ = ["DEADLINE", "EVENTS", "Event", "FLUSH", "Notifier", "REQUEST_TIMEOUT", "body_for", "check_url",
           "event_id", "payload"]

#: What a notification says happened (README "Recovery"); ``send`` takes any of EVENTS.
Event = Literal["started", "recovering", "succeeded", "failed", "cancelled", "no-capacity"]
EVENTS: tuple[str, ...] = get_args(Event)
#: Seconds one event may spend on one hook, retries and waits included.
DEADLINE = 3.0
#: Seconds ``close`` waits, in all, for the events still queued to be posted.
FLUSH = 10.0
#: Events that may wait to be posted; more are dropped, each with a warning.
QUEUE_SIZE = 64
#: Seconds one request may take (connect and answer), at most what is left of the DEADLINE.
REQUEST_TIMEOUT = 2.0
#: Hosts of Google Chat's incoming webhooks, which refuse fields their Message lacks.
GOOGLE_CHAT_HOSTS = frozenset({"chat.googleapis.com"})
#: The backoff between tries of a POST that was not sent (initial, maximum seconds, multiplier).
_BACKOFF = (0.2, 1.0, 2.0)


def check_url(url: str) -> str | None:
    """What is wrong with ``url`` as a notification hook (None: nothing): it must be http(s)
    with a host; anything else (a file, a mail address, a typo) could never take a POST."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:  # an unclosed IPv6 bracket, a bad port
        return f"{url!r} is not a URL ({exc}); give one such as https://hooks.slack.com/services/T000/B000/XXXX"
    if parts.scheme not in ("http", "https"):
        return (f"{url!r} is not an http(s) URL: a notification is a POST to a webhook, such as "
                "https://hooks.slack.com/services/T000/B000/XXXX")
    if not host:
        return f"{url!r} has no host: give a URL such as https://hooks.slack.com/services/T000/B000/XXXX"
    return None


# Annotations only: a TypedDict class costs ~15 µs a field to create (measured).
if TYPE_CHECKING:
    class EventJson(TypedDict):
        """The body of one event (the module docstring)."""

        text: str
        event: str
        job: str | None
        attempt: int
        rung: int
        state: str | None
        cost_usd: float | None
        id: str


    class ChatMessageJson(TypedDict):
        """What Google Chat is sent of an event: its Message's ``text`` alone."""

        text: str


def event_id(key: str, attempt: int, event: str) -> str:
    """The stable id of ``event`` of attempt ``attempt`` of the life of ``key``."""
    return hashlib.sha256(f"vxtrain/{key}/{attempt}/{event}".encode()).hexdigest()[:32]


def payload(event: str, *, job: str | None, attempt: int, rung: int, state: str | None,
            cost_usd: float | None, text: str, key: str = "") -> EventJson:
    """The JSON object of one event (``text`` made one line: a webhook shows it as the message)."""
    return {"text": " ".join(text.split()), "event": event, "job": job, "attempt": attempt, "rung": rung,
            "state": state, "cost_usd": cost_usd, "id": event_id(key, attempt, event)}


def body_for(url: str, body: EventJson) -> EventJson | ChatMessageJson:
    """What the hook at ``url`` is sent of ``body``: all of it, or ``{"text"}`` alone for
    Google Chat, which refuses the fields its Message has not (see the module docstring)."""
    return {"text": body["text"]} if urlsplit(url).hostname in GOOGLE_CHAT_HOSTS else body


class _NotSent(Exception):
    """A try that cannot have reached the hook (refused, unresolved) or that it refused to take (429)."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A hook that redirects is an error: urllib would follow a POST's 301-303 as a GET without its body."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Notifier:
    """Posts every event of the life of ``key`` to each of ``urls`` (http(s); another is dropped
    with a warning, as ``check_url`` says), off the caller's path: ``send`` queues, one thread
    posts, ``close`` (or leaving a ``with`` block) flushes. Problems are warnings on ``log``,
    never exceptions. ``deadline``: seconds one event may spend on one hook; ``flush``: seconds
    ``close`` waits in all (tests shorten them)."""

    def __init__(self, urls: Sequence[str], log: logging.Logger, *, key: str = "", deadline: float = DEADLINE,
                 flush: float = FLUSH) -> None:
        self.log, self.key, self.deadline, self.flush = log, key, deadline, flush
        self.urls: list[str] = []
        for url in dict.fromkeys(urls):  # one POST per hook, however often it was given
            problem = check_url(url)
            if problem is None:
                self.urls.append(url)
            else:
                log.warning("warning: notify: %s; no notification goes there", problem)
        self._opener = urllib.request.build_opener(_NoRedirect())
        self._queue: queue.Queue[EventJson | None] = queue.Queue(QUEUE_SIZE)
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Notifier:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def send(self, event: str, *, job: str | None, attempt: int, rung: int, state: str | None,
             cost_usd: float | None, text: str) -> None:
        """Queue the event for every hook; returns at once."""
        if not self.urls:
            return
        body = payload(event, job=job, attempt=attempt, rung=rung, state=state, cost_usd=cost_usd, text=text,
                       key=self.key)
        try:
            self._queue.put_nowait(body)
        except queue.Full:
            self.log.warning("warning: the %r notification was dropped: %d are still waiting to be posted",
                             event, QUEUE_SIZE)
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._drain, name="vxtrain-notify", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Post what is queued within ``flush`` seconds in all; what is left is one warning."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._queue.put(None)  # after the events queued before it
        thread.join(self.flush)
        if thread.is_alive():
            left = self._queue.qsize()
            self.log.warning("warning: %d notification(s) not posted within %g s; the job goes on",
                             max(left - 1, 1), self.flush)

    def _drain(self) -> None:
        while True:
            body = self._queue.get()
            if body is None:
                return
            for url in self.urls:
                self._deliver(url, body)

    def _deliver(self, url: str, body: EventJson) -> None:
        data = json.dumps(body_for(url, body)).encode()
        deadline = time.monotonic() + self.deadline
        tries, wait = 0, _BACKOFF[0]
        while True:
            tries += 1
            try:
                self._post(url, data, deadline)
                return
            except _NotSent as exc:
                if time.monotonic() + wait >= deadline:
                    self._warn(url, str(body["event"]), tries, exc)
                    return
                time.sleep(wait)
                wait = min(wait * _BACKOFF[2], _BACKOFF[1])
            except (urllib.error.URLError, OSError, ValueError) as exc:  # refused (4xx, 5xx), or may have been taken
                self._warn(url, str(body["event"]), tries, exc)
                return

    def _warn(self, url: str, event: str, tries: int, why: Exception | None) -> None:
        self.log.warning("warning: the %r notification to %s failed after %d %s within %g s: %s; the job goes on",
                         event, _where(url), tries, "try" if tries == 1 else "tries", self.deadline, _why(why))

    def _post(self, url: str, data: bytes, deadline: float) -> None:
        """One POST; _NotSent where trying again cannot make a second message."""
        request = urllib.request.Request(url, data=data, method="POST",
                                         headers={"Content-Type": "application/json; charset=UTF-8"})
        timeout = max(0.1, min(REQUEST_TIMEOUT, deadline - time.monotonic()))
        try:
            with self._opener.open(request, timeout=timeout) as answer:
                answer.read()
        except urllib.error.HTTPError as exc:
            exc.close()
            if exc.code == 429:  # Too Many Requests: the hook says it did not take it
                raise _NotSent(f"HTTP {exc.code} {exc.reason}") from exc
            raise
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (ConnectionRefusedError, socket.gaierror)):  # nothing was sent
                raise _NotSent(str(exc.reason)) from exc
            raise


def _where(url: str) -> str:
    """The hook as a warning may name it: scheme and host (its path and query may hold its token)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def _why(exc: Exception | None) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason} (not tried again: the hook may have taken it)"
    if isinstance(exc, urllib.error.URLError):
        exc = exc.reason if isinstance(exc.reason, Exception) else exc
    if isinstance(exc, TimeoutError | socket.timeout):
        return "no answer in time (not tried again: the hook may have taken it)"
    return "no answer in time" if exc is None else str(exc) or type(exc).__name__
