"""The list filter's ``create_time`` comparisons, as Vertex AI documents them for
ListCustomJobs ("create_time supports =, !=, <, <=, >, >= comparisons", RFC 3339):
what ``vxtrain jobs --since`` and ``vxtrain cost --since`` send."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from google.api_core import exceptions as gexc

from tests.backends.emulator.conftest import PARENT, custom_job
from vxtrain.vocab.timestamps import format_time


def test_create_time_compares_as_a_time(make_emulator: Any, connect: Any) -> None:
    client = connect(make_emulator(simulate_seconds=30))
    first = client.create_custom_job(parent=PARENT, custom_job=custom_job("first"))
    second = client.create_custom_job(parent=PARENT, custom_job=custom_job("second", {"team": "nlp"}))
    at = format_time(second.create_time)

    def names(filter_: str) -> list[str]:
        return [j.display_name for j in client.list_custom_jobs(request={"parent": PARENT, "filter": filter_})]

    assert names(f'create_time>="{at}"') == ["second"]
    assert names(f'create_time>"{at}"') == []
    assert names(f'create_time<"{at}"') == names(f"create_time<{at}") == ["first"]
    assert names(f'create_time<="{at}"') == ["second", "first"]
    assert names(f'create_time="{at}"') == ["second"] and names(f'create_time!="{at}"') == ["first"]
    earlier = format_time(first.create_time - timedelta(hours=1))
    assert names(f'create_time>="{earlier}" AND labels.team=nlp') == ["second"]
    # An offset other than Z names the same instant.
    shifted = (second.create_time + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S.%f+02:00")
    assert names(f'create_time>="{shifted}"') == ["second"]


@pytest.mark.parametrize("bad", ['create_time>"yesterday"', 'create_time:"2026-*"', 'labels.team>"a"',
                                 'state<"JOB_STATE_RUNNING"', 'display_name>="a"'])
def test_order_comparisons_are_create_times_alone(make_emulator: Any, connect: Any, bad: str) -> None:
    client = connect(make_emulator(simulate_seconds=30))
    with pytest.raises(gexc.InvalidArgument):
        list(client.list_custom_jobs(request={"parent": PARENT, "filter": bad}))
