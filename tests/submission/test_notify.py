"""Notifications (vxtrain/submission/notify.py) against a real HTTP server on 127.0.0.1: queued
off the caller's path, posted by one thread, flushed on close; tried again only where the
POST cannot have been taken."""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest

from tests.hooks import webhook
from vxtrain.submission.notify import (DEADLINE, EVENTS, Hook, Notifier, body_for, check_url, event_id,
                                       hooks_from_env, payload)
from vxtrain.vocab.timestamps import parse_time

#: A shorter bound than DEADLINE for the hooks that never take a notification (the suite's time).
SHORT = 1.0

STARTED = {"job": "projects/p/locations/us-central1/customJobs/1", "attempt": 0, "rung": 0,
           "state": "JOB_STATE_RUNNING", "cost_usd": None, "text": "job 1 started on us-central1"}


@pytest.fixture
def said() -> list[str]:
    return []


@pytest.fixture
def closed_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that takes connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield int(sock.getsockname()[1])


@pytest.mark.slow
def test_one_post_per_event_with_the_json_body_and_its_content_type(said: list[str]) -> None:
    with webhook() as hook:
        with Notifier([hook.url + "?token=t"], _log(said), key="k") as notifier:
            notifier.send("started", **STARTED)
            notifier.send("succeeded", **{**STARTED, "state": "JOB_STATE_SUCCEEDED", "cost_usd": 0.12,
                                          "text": "job 1\nsucceeded"})
    (path, headers, first), (_, _, second) = hook.posts
    assert path == "/services/T000/B000/secret?token=t"
    assert headers["Content-Type"].split(";")[0] == "application/json"
    when = first.pop("time")
    assert first == {"version": 1, "id": event_id("k", 0, "started"), "event": "started", "key": "k",
                     "job": "projects/p/locations/us-central1/customJobs/1", "attempt": 0, "rung": 0,
                     "state": "JOB_STATE_RUNNING", "cost_usd": None, "text": "job 1 started on us-central1"}
    assert abs((datetime.now(timezone.utc) - parse_time(when)).total_seconds()) < 30 and when.endswith("Z")
    assert headers["X-Vxtrain-Event-Id"] == first["id"] and "X-Vxtrain-Signature" not in headers  # no secret
    assert (second["event"], second["cost_usd"], second["text"]) == ("succeeded", 0.12, "job 1 succeeded")
    assert said == []


def test_each_event_has_a_stable_id_of_its_key_attempt_and_event() -> None:
    assert event_id("k", 1, "recovering") == event_id("k", 1, "recovering")
    ids = {event_id(k, a, e) for k in ("k", "l") for a in (0, 1) for e in EVENTS}
    assert len(ids) == 2 * 2 * len(EVENTS)


@pytest.mark.parametrize("status", [500, 503])
def test_a_5xx_may_have_been_taken_and_is_not_posted_again(status: int, said: list[str]) -> None:
    """Issue 34: a hook answering 500 got 29 POSTs for 4 events. A 5xx may come after the
    hook posted the message: one POST per event, and one warning."""
    with webhook([status] * 10) as hook:
        with Notifier([hook.url], _log(said)) as notifier:
            for event in ("started", "recovering", "succeeded", "failed"):
                notifier.send(event, **STARTED)
    assert [b["event"] for b in hook.bodies()] == ["started", "recovering", "succeeded", "failed"]
    assert len(said) == 4 and all(f"HTTP {status}" in line for line in said)


def test_a_429_was_not_taken_and_is_posted_again(said: list[str]) -> None:
    with webhook([429]) as hook:
        with Notifier([hook.url], _log(said)) as notifier:
            notifier.send("recovering", **STARTED)
    assert [b["event"] for b in hook.bodies()] == ["recovering", "recovering"]
    assert said == []


@pytest.mark.slow
def test_a_slow_hook_gets_each_event_once_and_never_holds_the_caller(said: list[str]) -> None:
    """Issue 34: a hook slower than the bound got every event twice (the timed-out POST was
    sent again), and the watch waited for it."""
    with webhook(delay=SHORT + 0.5) as hook:
        notifier = Notifier([hook.url], _log(said), deadline=SHORT, flush=3 * (SHORT + 1))
        began = time.monotonic()
        for event in ("started", "recovering"):
            notifier.send(event, **STARTED)
        assert time.monotonic() - began < 0.2  # queued, not posted on the caller's path
        notifier.close()
    assert [b["event"] for b in hook.bodies()] == ["started", "recovering"]
    assert len(said) == 2 and all("no answer in time" in line for line in said)


def test_a_refusal_is_one_warning_and_not_retried(said: list[str]) -> None:
    with webhook([404]) as hook, Notifier([hook.url], _log(said)) as notifier:
        notifier.send("failed", **STARTED)
    assert len(hook.posts) == 1
    [warning] = said
    assert warning.startswith("warning: the 'failed' notification to http://127.0.0.1:")
    assert "HTTP 404" in warning and "secret" not in warning  # the hook's path is its token


@pytest.mark.slow
def test_a_hook_that_keeps_refusing_to_take_it_ends_in_one_warning_within_the_deadline(said: list[str]) -> None:
    with webhook([429] * 100) as hook:
        began = time.monotonic()
        with Notifier([hook.url], _log(said), deadline=SHORT) as notifier:
            notifier.send("started", **STARTED)
        took = time.monotonic() - began
    assert 2 <= len(hook.posts) and took < SHORT + 0.9
    [warning] = said
    assert "HTTP 429" in warning


@pytest.mark.slow
@pytest.mark.parametrize("port_fixture", ["closed_port", "silent_port"])
def test_a_dead_hook_is_a_warning_within_the_bound(port_fixture: str, said: list[str],
                                                  request: pytest.FixtureRequest) -> None:
    port = request.getfixturevalue(port_fixture)
    with webhook() as live:
        notifier = Notifier([f"http://127.0.0.1:{port}/hooks/secret", live.url], _log(said), deadline=SHORT)
        began = time.monotonic()
        notifier.send("succeeded", **STARTED)  # never raises
        notifier.close()
        took = time.monotonic() - began
    assert took < SHORT + 0.9
    [warning] = said
    assert warning.startswith(f"warning: the 'succeeded' notification to http://127.0.0.1:{port} failed")
    assert "secret" not in warning and warning.endswith("the job goes on")
    assert [b["event"] for b in live.bodies()] == ["succeeded"]  # the next hook still gets it


@pytest.mark.parametrize("url", ["ftp://example.com/hook", "mailto:ops@example.com", "hooks.slack.com/services/x",
                                 "file:///tmp/hook", "https://", "http://[::1/hook"])
def test_check_url_refuses_what_cannot_take_a_post(url: str, said: list[str]) -> None:
    problem = check_url(url)
    assert problem is not None and repr(url) in problem
    with Notifier([url], _log(said)) as notifier:
        notifier.send("started", **STARTED)
    assert notifier.urls == [] and len(said) == 1 and said[0].startswith("warning: notify: ")


@pytest.mark.parametrize("url", ["https://hooks.slack.com/services/T/B/X", "http://127.0.0.1:8080/hook",
                                 "https://chat.googleapis.com/v1/spaces/S/messages?key=K&token=T"])
def test_check_url_takes_http_and_https_hooks(url: str) -> None:
    assert check_url(url) is None


@pytest.mark.slow
def test_a_hook_given_twice_gets_one_post(said: list[str]) -> None:
    with webhook() as hook, Notifier([hook.url, hook.url], _log(said)) as notifier:
        notifier.send("cancelled", **STARTED)
    assert len(hook.posts) == 1


def test_slack_and_google_chat_get_the_text_alone_every_other_hook_all_of_it() -> None:
    body = payload("no-capacity", **STARTED)
    assert body_for("https://chat.googleapis.com/v1/spaces/S/messages?key=K", body) == {"text": STARTED["text"]}
    assert body_for("https://hooks.slack.com/services/T/B/X", body) == {"text": STARTED["text"]}
    assert body_for("https://hooks.example.com/slack", body) == body
    assert list(body) == ["version", "id", "time", "event", "key", "job", "attempt", "rung", "state", "cost_usd",
                          "text"]
    assert 0 < DEADLINE <= 5  # a few seconds per hook and event: never a stalled watch
    assert EVENTS == ("started", "recovering", "succeeded", "failed", "cancelled", "no-capacity")


@pytest.mark.slow
def test_a_signed_hook_gets_an_hmac_of_the_exact_bytes_it_received(said: list[str]) -> None:
    """The receiver recomputes HMAC-SHA256 over the raw body it read, as docs/submitting.md's does."""
    with webhook() as hook, webhook() as unsigned:
        with Notifier([Hook(hook.url, "s3cret"), unsigned.url], _log(said), key="k") as notifier:
            notifier.send("started", **{**STARTED, "text": "job 1 — started ✓"})  # non-ASCII text: bytes matter
            notifier.send("succeeded", **{**STARTED, "cost_usd": 0.5})
    for (_, headers, body), raw in zip(hook.posts, hook.raws, strict=True):
        expected = "sha256=" + hmac.new(b"s3cret", raw, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(headers["X-Vxtrain-Signature"], expected)
        assert headers["X-Vxtrain-Event-Id"] == body["id"] == event_id("k", 0, body["event"])
    assert len(hook.posts) == 2 and json.loads(hook.raws[0])["text"] == "job 1 — started ✓"
    wrong = "sha256=" + hmac.new(b"other", hook.raws[0], hashlib.sha256).hexdigest()
    assert hook.posts[0][1]["X-Vxtrain-Signature"] != wrong
    assert all("X-Vxtrain-Signature" not in headers for _, headers, _ in unsigned.posts)
    assert said == []


@pytest.mark.slow
def test_two_processes_sending_one_event_give_it_one_id(said: list[str]) -> None:
    """A watcher and a reconcile pass racing on one event: each its own process and clock, one id."""
    sender = ("import logging, sys; from vxtrain.submission.notify import Hook, Notifier\n"
              "with Notifier([Hook(sys.argv[1], 'k3y')], logging.getLogger(), key='life') as n:\n"
              "    n.send('recovering', job='j', attempt=1, rung=0, state='JOB_STATE_FAILED', cost_usd=None,"
              " text='again')\n")
    with webhook() as hook:
        for _ in range(2):
            subprocess.run([sys.executable, "-c", sender, hook.url], check=True, timeout=60)
    (_, first_headers, first), (_, second_headers, second) = hook.posts
    assert first["id"] == second["id"] == event_id("life", 1, "recovering")
    assert first_headers["X-Vxtrain-Event-Id"] == second_headers["X-Vxtrain-Event-Id"] == first["id"]
    for (_, headers, _), raw in zip(hook.posts, hook.raws, strict=True):
        assert headers["X-Vxtrain-Signature"] == "sha256=" + hmac.new(b"k3y", raw, hashlib.sha256).hexdigest()


@pytest.mark.slow
@pytest.mark.parametrize("host", ["hooks.slack.com", "chat.googleapis.com"])
def test_slack_and_google_chat_hosts_are_posted_the_text_alone(host: str, said: list[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The host connected to on 127.0.0.1, as an /etc/hosts line would (the connect is the one
    thing replaced; the suite's guard still refuses any other host)."""
    connect = socket.create_connection

    def loopback(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        return connect(("127.0.0.1", address[1]) if address[0] == host else address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", loopback)
    with webhook() as hook:
        url = hook.url.replace("127.0.0.1", host)
        with Notifier([Hook(url, "s"), hook.url], _log(said), key="k") as notifier:
            notifier.send("failed", **STARTED)
    (_, headers, shaped), (_, _, whole) = hook.posts
    assert shaped == {"text": STARTED["text"]} and hook.raws[0] == json.dumps(shaped).encode()
    assert headers["Host"].split(":")[0] == host
    assert headers["X-Vxtrain-Signature"] == "sha256=" + hmac.new(b"s", hook.raws[0], hashlib.sha256).hexdigest()
    assert whole["event"] == "failed" and whole["version"] == 1 and said == []


def test_hooks_from_env_reads_url_and_secret_and_skips_what_is_unset(said: list[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VX_URL", "https://example.com/a")
    monkeypatch.setenv("VX_SECRET", "s")
    monkeypatch.delenv("VX_GONE", raising=False)
    hooks = hooks_from_env([("VX_URL", "VX_SECRET"), ("VX_URL", None), ("VX_GONE", None), ("VX_URL", "VX_GONE")],
                           _log(said))
    assert hooks == [Hook("https://example.com/a", "s"), Hook("https://example.com/a", None)]
    assert len(said) == 2 and "VX_GONE (url_env) is not set" in said[0]
    assert "VX_GONE (secret_env) is not set" in said[1] and "example.com" not in said[1]  # a URL is a secret


def _log(said: list[str]) -> logging.Logger:
    """A logger whose lines land in ``said``."""
    logger = logging.getLogger(f"tests.notify.{id(said)}")
    logger.propagate = False

    class Into(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    if not logger.handlers:
        logger.addHandler(Into())
    return logger
