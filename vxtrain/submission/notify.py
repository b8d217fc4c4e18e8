"""Notifications: one JSON POST per event of a job's life (``--notify URL``, ``notify:``).

The body is version 1 of the envelope,
``{"version": 1, "id", "time", "event", "key", "job", "attempt", "rung", "state", "cost_usd", "text"}``;
``text`` is one human line, the one key Slack's and Google Chat's incoming webhooks
read: both take a POST of ``{"text": "..."}`` with ``Content-Type: application/json``
(https://api.slack.com/messaging/webhooks;
https://developers.google.com/workspace/chat/quickstart/webhooks; read 2026-11-27).
Google Chat's endpoint is a Google API whose JSON parser refuses a field its Message
has not ("Invalid JSON payload received. Unknown name ...": https://github.com/ansible/awx/issues/4665),
and a Slack message is ``text`` with Slack's own optional keys, so a hook on one of their
hosts (:data:`TEXT_ONLY_HOSTS`) gets ``{"text"}`` alone; every other hook gets it all.
``id`` is stable (derived from the key, the attempt and the event), so a receiver drops
the copy a racing watcher, a reconcile pass or a re-run sends of the same event.

A hook given as ``{url_env, secret_env}`` is signed: the POST carries
``X-Vxtrain-Signature: sha256=<hex HMAC-SHA256 of the exact body bytes, keyed by the secret>``
(the scheme of GitHub's webhooks:
https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries) and every
POST carries ``X-Vxtrain-Event-Id`` (the ``id``), so a receiver verifies before it parses.

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
import hmac
import json
import logging
import os
import queue
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypedDict, get_args
from urllib.parse import urlsplit

from vxtrain.vocab.timestamps import format_time


__all__ = ["DEADLINE", "EVENTS", "EVENT_ID_HEADER", "Event", "FLUSH", "Hook", "Notifier", "REQUEST_TIMEOUT",
           "SIGNATURE_HEADER", "TEXT_ONLY_HOSTS", "VERSION", "body_for", "check_url", "event_id", "hooks_from_env",
           "payload", "sign"]

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
#: Hosts of Slack's and Google Chat's incoming webhooks (each service's documented URL, see
#: the module docstring): they get ``{"text"}`` alone, Google Chat refusing fields its Message lacks.
TEXT_ONLY_HOSTS = frozenset({"hooks.slack.com", "chat.googleapis.com"})
#: The envelope's version: a receiver dispatches on it; a change of a key's meaning is a new one.
VERSION = 1
#: The header holding ``sha256=<hex HMAC-SHA256 of the body>`` on a hook with a secret.
SIGNATURE_HEADER = "X-Vxtrain-Signature"
#: The header holding the event's stable id on every POST.
EVENT_ID_HEADER = "X-Vxtrain-Event-Id"
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

        version: int
        id: str
        time: str
        event: str
        key: str
        job: str | None
        attempt: int
        rung: int
        state: str | None
        cost_usd: float | None
        text: str


    class ChatMessageJson(TypedDict):
        """What Google Chat is sent of an event: its Message's ``text`` alone."""

        text: str


class Hook(NamedTuple):
    """A hook: its URL and the secret its POSTs are signed with (None: unsigned)."""

    url: str
    secret: str | None = None


def hooks_from_env(targets: Iterable[tuple[str, str | None]], log: logging.Logger) -> list[Hook]:
    """``notify: [{url_env, secret_env}]``'s hooks, their URLs and secrets read from this
    process's environment: a plan keeps the names alone (both are secrets). A hook whose URL's
    variable is not set gets nothing; one whose secret's variable is not set gets nothing
    either, rather than an unsigned POST its receiver must refuse. Each is one warning."""
    hooks = []
    for url_env, secret_env in targets:
        url = os.environ.get(url_env, "")
        secret = os.environ.get(secret_env, "") if secret_env else None
        if not url:
            log.warning("warning: notify: the environment variable %s (url_env) is not set: no notification "
                        "goes to that hook", url_env)
        elif secret == "":
            log.warning("warning: notify: the environment variable %s (secret_env) is not set: no notification "
                        "goes to the hook of %s, whose receiver checks a signature", secret_env, url_env)
        else:
            hooks.append(Hook(url, secret))
    return hooks


def sign(secret: str, data: bytes) -> str:
    """The signature header's value for ``data`` (the exact bytes POSTed): ``sha256=<hex>``."""
    return "sha256=" + hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()


def event_id(key: str, attempt: int, event: str) -> str:
    """The stable id of ``event`` of attempt ``attempt`` of the life of ``key``."""
    return hashlib.sha256(f"vxtrain/{key}/{attempt}/{event}".encode()).hexdigest()[:32]


def payload(event: str, *, job: str | None, attempt: int, rung: int, state: str | None,
            cost_usd: float | None, text: str, key: str = "") -> EventJson:
    """The envelope of one event (version 1): ``time`` is now, when it was seen (RFC 3339,
    UTC), ``text`` one line (a webhook shows it as the message)."""
    return {"version": VERSION, "id": event_id(key, attempt, event),
            "time": format_time(datetime.now(timezone.utc)), "event": event, "key": key, "job": job,
            "attempt": attempt, "rung": rung, "state": state, "cost_usd": cost_usd, "text": " ".join(text.split())}


def body_for(url: str, body: EventJson) -> EventJson | ChatMessageJson:
    """What the hook at ``url`` is sent of ``body``: all of it, or ``{"text"}`` alone for
    Slack and Google Chat, known by host (see the module docstring)."""
    return {"text": body["text"]} if urlsplit(url).hostname in TEXT_ONLY_HOSTS else body


class _NotSent(Exception):
    """A try that cannot have reached the hook (refused, unresolved) or that it refused to take (429)."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A hook that redirects is an error: urllib would follow a POST's 301-303 as a GET without its body."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Notifier:
    """Posts every event of the life of ``key`` to each of ``hooks`` (a URL, or a :class:`Hook`
    with its signing secret; http(s): another is dropped with a warning, as ``check_url``
    says), off the caller's path: ``send`` queues, one thread
    posts, ``close`` (or leaving a ``with`` block) flushes. Problems are warnings on ``log``,
    never exceptions. ``deadline``: seconds one event may spend on one hook; ``flush``: seconds
    ``close`` waits in all (tests shorten them)."""

    def __init__(self, hooks: Sequence[str | Hook], log: logging.Logger, *, key: str = "",
                 deadline: float = DEADLINE, flush: float = FLUSH) -> None:
        self.log, self.key, self.deadline, self.flush = log, key, deadline, flush
        self.hooks: list[Hook] = []
        given = [Hook(hook) if isinstance(hook, str) else hook for hook in hooks]
        for url in dict.fromkeys(hook.url for hook in given):  # one POST per hook, however often it was given
            problem = check_url(url)
            if problem is None:
                self.hooks.append(next(hook for hook in given if hook.url == url))
            else:
                log.warning("warning: notify: %s; no notification goes there", problem)
        self.urls = [hook.url for hook in self.hooks]
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
        if not self.hooks:
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
            for hook in self.hooks:
                self._deliver(hook, body)

    def _deliver(self, hook: Hook, body: EventJson) -> None:
        url = hook.url
        data = json.dumps(body_for(url, body)).encode()
        headers = {"Content-Type": "application/json; charset=UTF-8", EVENT_ID_HEADER: str(body["id"])}
        if hook.secret is not None:
            headers[SIGNATURE_HEADER] = sign(hook.secret, data)  # over these bytes, as sent
        deadline = time.monotonic() + self.deadline
        tries, wait = 0, _BACKOFF[0]
        while True:
            tries += 1
            try:
                self._post(url, data, headers, deadline)
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

    def _post(self, url: str, data: bytes, headers: dict[str, str], deadline: float) -> None:
        """One POST; _NotSent where trying again cannot make a second message."""
        request = urllib.request.Request(url, data=data, method="POST", headers=headers)
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
