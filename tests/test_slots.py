"""slots.py is the home of replica names: the one parser that joblogs (--replica),
env (--replica), the emulator's Logging service and the failed-job tail use."""
from __future__ import annotations

import io

import pytest

from vxtrain import joblogs, slots
from vxtrain.backends.emulator.logging_service import split_line
from vxtrain.commands.env import parse_replica
from vxtrain.errors import UsageError
from vxtrain.render.progress import PlainProgress


@pytest.mark.parametrize(("text", "parsed"), [
    ("workerpool0-0", (0, 0)), ("workerpool1-12", (1, 12)), ("workerpool3-0", (3, 0)),
    ("workerpool4-0", None), ("workerpool1:0", None), ("workers-0", None), ("workerpool1-", None),
    (" workerpool1-0", None), ("service", None),
])
def test_vertex_replica_names(text: str, parsed: tuple[int, int] | None) -> None:
    assert slots.parse_replica(text) == parsed


def test_every_slot_has_a_name_the_parser_reads_back() -> None:
    for slot in slots.SLOTS:
        assert slots.parse_replica(slots.replica_name(slot.index, 7)) == (slot.index, 7)
    assert slots.parse_replica(slots.replica_name(len(slots.SLOTS) - 1, 0)) is not None


@pytest.mark.parametrize(("text", "parsed"), [
    ("workerpool1:0", (1, 0)), ("workerpool1-0", (1, 0)), ("workerpool1/2", (1, 2)),
    (" workers :3 ", (1, 3)), ("chief:0", (0, 0)), ("reduction_server:1", (2, 1)),
    ("workerpool9:0", (9, 0)),  # any K: `env` names the pools the job has
    ("workerpool:0", None), ("nobody:0", None), ("workers", None),
])
def test_loose_replica_references(text: str, parsed: tuple[int, int] | None) -> None:
    assert slots.parse_replica(text, loose=True) == parsed


def test_the_users_of_the_parser_agree() -> None:
    assert joblogs.check_replica("workerpool3-1") == "workerpool3-1"
    assert joblogs.check_replica("service") == "service"
    with pytest.raises(UsageError, match="workerpool4-0"):
        joblogs.check_replica("workerpool4-0")
    assert parse_replica("workers:2") == (1, 2)
    with pytest.raises(UsageError, match="--replica takes workerpoolK:I"):
        parse_replica("nobody:0")
    assert split_line("[trial 2] [workerpool1-0] loss=0.3") == ("workerpool1-0", "loss=0.3")
    assert split_line("[workerpool7-0] not a slot") == ("service", "[workerpool7-0] not a slot")


def test_the_failed_job_tail_finds_the_replica_its_error_names() -> None:
    progress = PlainProgress(io.StringIO())
    progress.keep([joblogs.Entry("workerpool1-0", "t", "ERROR", "Traceback ...")])
    view = {"state": "JOB_STATE_FAILED",
            "error": {"message": "The replica workerpool1-0 exited with a non-zero status of 1."}}
    assert progress.failure_tail(view) == ("workerpool1-0", ["Traceback ..."])
    assert progress.failure_tail({**view, "state": "JOB_STATE_SUCCEEDED"}) is None

