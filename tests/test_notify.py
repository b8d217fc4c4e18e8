"""Notifications (vxtrain/submission/notify.py) against a real HTTP server on 127.0.0.1."""
from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from tests.hooks import webhook
from vxtrain.submission.notify import DEADLINE, EVENTS, Notifier, body_for, check_url, payload

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
        notifier = Notifier([hook.url + "?token=t"], said.append)
        notifier.send("started", **STARTED)
        notifier.send("succeeded", **{**STARTED, "state": "JOB_STATE_SUCCEEDED", "cost_usd": 0.12,
                                      "text": "job 1\nsucceeded"})
    (path, headers, first), (_, _, second) = hook.posts
    assert path == "/services/T000/B000/secret?token=t"
    assert headers["Content-Type"].split(";")[0] == "application/json"
    assert first == {"text": "job 1 started on us-central1", "event": "started",
                     "job": "projects/p/locations/us-central1/customJobs/1", "attempt": 0, "rung": 0,
                     "state": "JOB_STATE_RUNNING", "cost_usd": None}
    assert (second["event"], second["cost_usd"], second["text"]) == ("succeeded", 0.12, "job 1 succeeded")
    assert said == []


@pytest.mark.slow
@pytest.mark.parametrize("status", [500, 503, 429])
def test_a_5xx_or_429_is_retried_then_delivered(status: int, said: list[str]) -> None:
    with webhook([status]) as hook:
        Notifier([hook.url], said.append).send("recovering", **STARTED)
    assert [b["event"] for b in hook.bodies()] == ["recovering", "recovering"]
    assert said == []


@pytest.mark.slow
def test_a_refusal_is_one_warning_and_not_retried(said: list[str]) -> None:
    with webhook([404]) as hook:
        Notifier([hook.url], said.append).send("failed", **STARTED)
    assert len(hook.posts) == 1
    [warning] = said
    assert warning.startswith("warning: the 'failed' notification to http://127.0.0.1:")
    assert "HTTP 404" in warning and "secret" not in warning  # the hook's path is its token


@pytest.mark.slow
def test_a_hook_that_keeps_failing_ends_in_one_warning_within_the_deadline(said: list[str]) -> None:
    with webhook([500] * 100) as hook:
        began = time.monotonic()
        Notifier([hook.url], said.append, deadline=SHORT).send("started", **STARTED)
        took = time.monotonic() - began
    assert 2 <= len(hook.posts) and took < SHORT + 0.9
    [warning] = said
    assert "HTTP Error 500" in warning or "HTTP 500" in warning


@pytest.mark.slow
@pytest.mark.parametrize("port_fixture", ["closed_port", "silent_port"])
def test_a_dead_hook_is_a_warning_within_the_bound(port_fixture: str, said: list[str],
                                                  request: pytest.FixtureRequest) -> None:
    port = request.getfixturevalue(port_fixture)
    with webhook() as live:
        notifier = Notifier([f"http://127.0.0.1:{port}/hooks/secret", live.url], said.append, deadline=SHORT)
        began = time.monotonic()
        notifier.send("succeeded", **STARTED)  # never raises
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
    notifier = Notifier([url], said.append)
    notifier.send("started", **STARTED)
    assert notifier.urls == [] and len(said) == 1 and said[0].startswith("warning: notify: ")


@pytest.mark.parametrize("url", ["https://hooks.slack.com/services/T/B/X", "http://127.0.0.1:8080/hook",
                                 "https://chat.googleapis.com/v1/spaces/S/messages?key=K&token=T"])
def test_check_url_takes_http_and_https_hooks(url: str) -> None:
    assert check_url(url) is None


@pytest.mark.slow
def test_a_hook_given_twice_gets_one_post(said: list[str]) -> None:
    with webhook() as hook:
        Notifier([hook.url, hook.url], said.append).send("cancelled", **STARTED)
    assert len(hook.posts) == 1


def test_google_chat_gets_the_text_alone_every_other_hook_all_of_it() -> None:
    body = payload("no-capacity", **STARTED)
    assert body_for("https://chat.googleapis.com/v1/spaces/S/messages?key=K", body) == {"text": STARTED["text"]}
    assert body_for("https://hooks.slack.com/services/T/B/X", body) == body
    assert set(body) == {"text", "event", "job", "attempt", "rung", "state", "cost_usd"}
    assert 0 < DEADLINE <= 5  # a few seconds per hook and event: never a stalled watch
    assert EVENTS == ("started", "recovering", "succeeded", "failed", "cancelled", "no-capacity")
