"""List filters and page tokens."""
from __future__ import annotations

import re
import time
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1 as v1
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.backends.emulator.conftest import PARENT, TERMINAL, State, custom_job, wait_until
from vxtrain.backends.emulator import RpcError, parse_filter
from vxtrain.backends.emulator.filters import MAX_DEPTH, wildcard_match


def test_list_filters(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=30)
    client = connect(handle)
    a = client.create_custom_job(parent=PARENT, custom_job=custom_job("alpha", {"team": "nlp", "key": "k1"}))
    b = client.create_custom_job(parent=PARENT, custom_job=custom_job("beta", {"team": "vision"}))
    client.cancel_custom_job(name=b.name)
    wait_until(client, b.name, TERMINAL)
    other = "projects/other/locations/us-central1"
    client.create_custom_job(parent=other, custom_job=custom_job("alpha", {"team": "nlp"}))

    def names(filter_: str) -> set[str]:
        return {j.name for j in client.list_custom_jobs(request={"parent": PARENT, "filter": filter_})}

    assert names("") == {a.name, b.name}
    assert names("labels.team=nlp") == names('labels.team="nlp"') == {a.name}
    assert names("labels.key:*") == {a.name}
    assert names('display_name="beta"') == names("display_name=beta") == {b.name}
    assert names("state=JOB_STATE_CANCELLED") == {b.name}
    assert names("state!=JOB_STATE_CANCELLED") == {a.name}
    assert names('labels.team="nlp" AND state!=JOB_STATE_CANCELLED AND display_name=alpha') == {a.name}
    assert names("labels.team=nlp AND display_name=beta") == set()
    for bad in ("create_time>1", "state=RUNNING", "=x", "(labels.team=nlp", "labels.team=nlp)", "()"):
        with pytest.raises(gexc.InvalidArgument):
            names(bad)


def test_aip_160_grouping_or_and_not(make_emulator: Any, connect: Any) -> None:
    """Parentheses (vxtrain's `list --filter` wraps the user's filter in them), OR (binding
    tighter than AND, as AIP-160's grammar says), NOT and '-', and juxtaposition as AND."""
    client = connect(make_emulator(simulate_seconds=30))
    a = client.create_custom_job(parent=PARENT, custom_job=custom_job("alpha", {"team": "nlp"})).name
    b = client.create_custom_job(parent=PARENT, custom_job=custom_job("beta", {"team": "vision"})).name
    c = client.create_custom_job(parent=PARENT, custom_job=custom_job("gamma (x)", {"team": "nlp"})).name

    def names(filter_: str) -> set[str]:
        return {j.name for j in client.list_custom_jobs(request={"parent": PARENT, "filter": filter_})}

    assert names('(display_name="alpha")') == names('((display_name = "alpha"))') == {a}
    assert names('(display_name="alpha") AND labels.team="nlp"') == {a}
    assert names("labels.team=nlp OR labels.team=vision") == {a, b, c}
    assert names("display_name=beta OR display_name=alpha AND labels.team=nlp") == {a}  # OR first
    assert names("(display_name=beta OR display_name=alpha) AND labels.team=vision") == {b}
    assert names("NOT display_name=alpha") == names("-display_name=alpha") == {b, c}
    assert names("NOT (labels.team=nlp OR display_name=beta)") == set()
    assert names("labels.team=nlp display_name:gamma*") == {c}  # a sequence is an AND
    assert names('display_name="gamma (x)"') == {c}  # parentheses inside a quoted value are text


def test_a_wildcard_filter_that_backtracked_for_minutes_answers_at_once(make_emulator: Any, connect: Any) -> None:
    """display_name:"a*a*…*b" (8 wildcards) against a 128-character name of a's: a regular
    expression of .* runs took over 60 s holding the store's lock; the linear match answers
    in milliseconds (the bound is generous for a loaded 2-core machine)."""
    client = connect(make_emulator(simulate_seconds=30))
    name = client.create_custom_job(parent=PARENT, custom_job=custom_job("a" * 128)).name
    started = time.monotonic()
    for _ in range(5):
        assert list(client.list_custom_jobs(request={"parent": PARENT, "filter": 'display_name:"' + "a*" * 8 + 'b"'})) \
            == []
    assert [j.name for j in client.list_custom_jobs(request={"parent": PARENT, "filter": 'display_name:"' + "a*" * 8
                                                                                          + 'a"'})] == [name]
    assert time.monotonic() - started < 5.0


def test_list_pages(make_emulator: Any, connect: Any) -> None:
    client = connect(make_emulator(simulate_seconds=30))
    created = [client.create_custom_job(parent=PARENT, custom_job=custom_job(f"j{i}")).name for i in range(5)]
    first = client.list_custom_jobs(request={"parent": PARENT, "page_size": 2})
    assert len(first.custom_jobs) == 2 and first.next_page_token
    assert [j.name for j in first] == created[::-1]  # the pager follows page tokens; newest first
    with pytest.raises(gexc.InvalidArgument):
        client.list_custom_jobs(request={"parent": PARENT, "page_token": "not-a-token"})


def test_page_tokens_survive_jobs_created_between_pages(make_emulator: Any, connect: Any) -> None:
    """A page token is a cursor: new jobs (listed first) neither repeat old ones on
    the next page nor push any out of the listing."""
    client = connect(make_emulator(simulate_seconds=30))
    old = [client.create_custom_job(parent=PARENT, custom_job=custom_job(f"old{i}")).name for i in range(5)]
    first = client.list_custom_jobs(request={"parent": PARENT, "page_size": 2})
    page1 = [j.name for j in first.custom_jobs]
    for i in range(3):
        client.create_custom_job(parent=PARENT, custom_job=custom_job(f"new{i}"))
    rest = client.list_custom_jobs(request={"parent": PARENT, "page_size": 2, "page_token": first.next_page_token})
    assert page1 + [j.name for j in rest] == old[::-1]


def test_list_filter_wildcards_and_quoted_words(make_emulator: Any, connect: Any) -> None:
    """display_name:"x*" is Vertex's documented wildcard; a quoted value may hold AND or OR."""
    client = connect(make_emulator(simulate_seconds=30))
    a = client.create_custom_job(parent=PARENT, custom_job=custom_job("my_job_1", {"k": "or"})).name
    b = client.create_custom_job(parent=PARENT, custom_job=custom_job("cats AND dogs OR birds")).name

    def names(filter_: str) -> set[str]:
        return {j.name for j in client.list_custom_jobs(request={"parent": PARENT, "filter": filter_})}

    assert names('display_name:"my_job_*"') == names("display_name:my_*1") == {a}
    assert names('display_name:"my_job"') == set()
    assert names('display_name="cats AND dogs OR birds"') == {b}
    assert names('display_name="cats AND dogs OR birds" AND labels.k:*') == set()
    assert names("labels.k=OR") == set() and names("labels.k=or") == {a}
    assert names("labels.k!=or") == {b}  # an absent label is not equal to anything
    for bad in ("labels.k=or AND", "labels.k=or AND OR x=1", "NOT NOT display_name=x", "labels.k=or OR"):
        with pytest.raises(gexc.InvalidArgument):
            names(bad)


def test_parse_filter_unit() -> None:
    job = v1.CustomJob(display_name='say "hi"', labels={"a": "1"}, state=State.JOB_STATE_RUNNING)
    keep, drop = parse_filter(r'display_name="say \"hi\"" AND labels.a="1"'), parse_filter("labels.a!=1")
    assert keep is not None and keep(job) and drop is not None and not drop(job)
    assert parse_filter("  ") is None


def test_parentheses_nested_past_the_limit_are_refused_not_a_crash() -> None:
    assert parse_filter("(" * MAX_DEPTH + "labels.a=1" + ")" * MAX_DEPTH) is not None
    with pytest.raises(RpcError, match="nested deeper"):
        parse_filter("(" * 100_000 + "labels.a=1" + ")" * 100_000)


@settings(max_examples=300, deadline=None)
@given(st.text("ab*", max_size=8), st.text("ab", max_size=12))
def test_the_wildcard_match_agrees_with_a_regular_expression(pattern: str, text: str) -> None:
    expected = re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), text, re.DOTALL) is not None
    assert wildcard_match(pattern, text) == expected
