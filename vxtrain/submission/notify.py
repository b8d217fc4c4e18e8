"""Notifications: one JSON POST per event while submit follows a job (``--notify URL``,
``notify: [URL]``).

The body is ``{"text", "event", "job", "attempt", "rung", "state", "cost_usd"}``;
``text`` is one human line, the one key Slack's and Google Chat's incoming webhooks
read: both take a POST of ``{"text": "..."}`` with ``Content-Type: application/json``
(https://api.slack.com/messaging/webhooks;
https://developers.google.com/workspace/chat/quickstart/webhooks; read 2026-11-27).
Google Chat's endpoint is a Google API whose JSON parser refuses a field its Message
has not ("Invalid JSON payload received. Unknown name ...": https://github.com/ansible/awx/issues/4665),
so a ``chat.googleapis.com`` hook gets ``{"text"}`` alone; every other hook gets it all.

A notification is a side channel: it never changes the job, the exit code or the
watch. Each POST is retried (google.api_core.retry: exponential backoff) on a
connection error, a timeout, HTTP 429 and 5xx, within :data:`DEADLINE` seconds, every
request under a timeout; one that still fails is one warning through ``say``. A hook's
URL is a secret (Slack's path is its token): a warning names its scheme and host only.
"""
from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from google.api_core import exceptions as core_exceptions
from google.api_core import retry as core_retry

from vxtrain.vocab.callbacks import Say

__all__ = ["DEADLINE", "EVENTS", "Event", "Notifier", "REQUEST_TIMEOUT", "body_for", "check_url", "payload"]

#: What a notification says happened (README "Recovery"); ``send`` takes any of EVENTS.
Event = Literal["started", "recovering", "succeeded", "failed", "cancelled", "no-capacity"]
EVENTS: tuple[str, ...] = get_args(Event)
#: Seconds one event may spend on one hook, retries and waits included: the watch goes on after.
DEADLINE = 3.0
#: Seconds one request may take (connect and answer), at most what is left of the DEADLINE.
REQUEST_TIMEOUT = 2.0
#: Hosts of Google Chat's incoming webhooks, which refuse fields their Message lacks.
GOOGLE_CHAT_HOSTS = frozenset({"chat.googleapis.com"})
#: The backoff between tries (initial, maximum seconds, multiplier).
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


def payload(event: str, *, job: str | None, attempt: int, rung: int, state: str | None,
            cost_usd: float | None, text: str) -> dict[str, Any]:
    """The JSON object of one event (``text`` made one line: a webhook shows it as the message)."""
    return {"text": " ".join(text.split()), "event": event, "job": job, "attempt": attempt, "rung": rung,
            "state": state, "cost_usd": cost_usd}


def body_for(url: str, body: dict[str, Any]) -> dict[str, Any]:
    """What the hook at ``url`` is sent of ``body``: all of it, or ``{"text"}`` alone for
    Google Chat, which refuses the fields its Message has not (see the module docstring)."""
    return {"text": body["text"]} if urlsplit(url).hostname in GOOGLE_CHAT_HOSTS else body


class _Transient(Exception):
    """A try worth repeating: no connection, a timeout, HTTP 429 or 5xx."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A hook that redirects is an error: urllib would follow a POST's 301-303 as a GET without its body."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Notifier:
    """Sends every event to each of ``urls`` (http(s); another is dropped with a warning, as
    ``check_url`` says); problems are warnings through ``say``, never exceptions. ``deadline``:
    the seconds one event may spend on one hook (tests shorten it)."""

    def __init__(self, urls: Sequence[str], say: Say, *, deadline: float = DEADLINE) -> None:
        self.say = say
        self.deadline = deadline
        self.urls: list[str] = []
        for url in dict.fromkeys(urls):  # one POST per hook, however often it was given
            problem = check_url(url)
            if problem is None:
                self.urls.append(url)
            else:
                say(f"warning: notify: {problem}; no notification goes there")
        self._opener = urllib.request.build_opener(_NoRedirect())

    def send(self, event: str, *, job: str | None, attempt: int, rung: int, state: str | None,
             cost_usd: float | None, text: str) -> None:
        """POST the event to every hook, each within ``deadline`` seconds."""
        body = payload(event, job=job, attempt=attempt, rung=rung, state=state, cost_usd=cost_usd, text=text)
        for url in self.urls:
            self._deliver(url, event, body)

    def _deliver(self, url: str, event: str, body: dict[str, Any]) -> None:
        data = json.dumps(body_for(url, body)).encode()
        deadline = time.monotonic() + self.deadline
        failures: list[Exception] = []
        retry = core_retry.Retry(predicate=core_retry.if_exception_type(_Transient), initial=_BACKOFF[0],
                                 maximum=_BACKOFF[1], multiplier=_BACKOFF[2], timeout=self.deadline,
                                 on_error=failures.append)
        try:
            retry(lambda: self._post(url, data, deadline))()
        except core_exceptions.RetryError:  # DEADLINE passed: the last try's failure says why
            self._warn(url, event, len(failures), failures[-1] if failures else None)
        except (urllib.error.HTTPError, ValueError) as exc:  # refused (4xx, 3xx), or not a URL urllib takes
            self._warn(url, event, len(failures) + 1, exc)

    def _warn(self, url: str, event: str, tries: int, why: Exception | None) -> None:
        self.say(f"warning: the {event!r} notification to {_where(url)} failed after {tries} "
                 f"{'try' if tries == 1 else 'tries'} within {self.deadline:g} s: {_why(why)}; the job goes on")

    def _post(self, url: str, data: bytes, deadline: float) -> None:
        """One POST; _Transient for what a retry may mend, HTTPError for a refusal."""
        request = urllib.request.Request(url, data=data, method="POST",
                                         headers={"Content-Type": "application/json; charset=UTF-8"})
        timeout = max(0.1, min(REQUEST_TIMEOUT, deadline - time.monotonic()))
        try:
            with self._opener.open(request, timeout=timeout) as answer:
                answer.read()
        except urllib.error.HTTPError as exc:
            exc.close()
            if exc.code == 429 or exc.code >= 500:
                raise _Transient(f"HTTP {exc.code} {exc.reason}") from exc
            raise
        except (OSError, http.client.HTTPException) as exc:  # refused, unreachable, a timeout, a reset
            raise _Transient(str(getattr(exc, "reason", exc)) or type(exc).__name__) from exc


def _where(url: str) -> str:
    """The hook as a warning may name it: scheme and host (its path and query may hold its token)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def _why(exc: Exception | None) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason} (not retried: the hook refused it)"
    return "no answer in time" if exc is None else str(exc) or type(exc).__name__
