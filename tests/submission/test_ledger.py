"""The ledger over jobs as the Job API gives them (REST JSON): the grouping by key, attempt
and rung, the queue wait and run time, each job's price from the catalog (the function plan
and recovery use), the percentiles, and the spend by group. No API here: the jobs are
written as a List answers them; tests/submission/test_ledger_e2e.py reads them from the
emulator."""
from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from vxtrain import errors
from vxtrain.catalog import prices
from vxtrain.model import ATTEMPT_LABEL, IDEMPOTENCY_LABEL, RUNG_LABEL
from vxtrain.planning.cost import job_per_hour
from vxtrain.submission.ledger import (
    NO_KEY, TOTAL, UNPRICED, Ledger, Query, check_by, cost_report, ledger_job, percentile, queue_stats,
)
from vxtrain.submission.names import label_value
from vxtrain.vocab.kinds import JobState
from vxtrain.vocab.timestamps import format_time

REGION = "us-central1"
T0 = datetime(2026, 11, 20, 22, 0, tzinfo=timezone.utc)
NOW = T0 + timedelta(days=2)
N1 = prices.machine_price(REGION, "n1-standard-4")
T4 = prices.accelerator_price(REGION, "NVIDIA_TESLA_T4")
assert N1 is not None and T4 is not None and N1.usd_per_hour is not None and T4.usd_per_hour is not None
N1_HOUR, T4_HOUR = N1.usd_per_hour, T4.usd_per_hour


def at(minutes: float) -> str:
    return format_time(T0 + timedelta(minutes=minutes))


def pool(machine: str = "n1-standard-4", replicas: int = 1, gpus: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {"machineType": machine}
    if gpus:
        spec.update(acceleratorType="NVIDIA_TESLA_T4", acceleratorCount=gpus)
    return {"machineSpec": spec, "replicaCount": str(replicas),
            "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/train:1"}}


def job(name: str, state: JobState, *, created: float = 0, started: float | None = None,
        ended: float | None = None, key: str | None = None, rung: int | None = None, attempt: int | None = None,
        pools: list[dict[str, Any]] | None = None, spot: bool = False, labels: dict[str, str] | None = None,
        region: str = REGION) -> dict[str, Any]:
    """A CustomJob as ListCustomJobs answers it; times in minutes after T0."""
    all_labels = dict(labels or {})
    for label, value in ((IDEMPOTENCY_LABEL, key), (RUNG_LABEL, rung), (ATTEMPT_LABEL, attempt)):
        if value is not None:
            all_labels[label] = str(value)
    spec: dict[str, Any] = {"workerPoolSpecs": pools or [pool()]}
    if spot:
        spec["scheduling"] = {"strategy": "SPOT"}
    out: dict[str, Any] = {"name": f"projects/p/locations/{region}/customJobs/{name}", "displayName": name,
                           "state": state.value, "createTime": at(created), "labels": all_labels, "jobSpec": spec}
    for field, minutes in (("startTime", started), ("endTime", ended)):
        if minutes is not None:
            out[field] = at(minutes)
    return out


def ledger(*jobs: dict[str, Any], now: datetime = NOW, since: datetime | None = None) -> Ledger:
    regions = tuple(dict.fromkeys(j["name"].split("/")[3] for j in jobs)) or (REGION,)
    listed = [ledger_job(j, j["name"].split("/")[3], now) for j in jobs]
    return Ledger(Query("p", regions, since=since), now, tuple(listed))


# --- one job --------------------------------------------------------------------------------

def test_a_job_s_wait_run_and_cost() -> None:
    one = ledger_job(job("a", JobState.SUCCEEDED, created=0, started=3, ended=63, pools=[pool(gpus=1)]), REGION, NOW)
    assert one.queued_s == 180 and one.ran_s == 3600
    assert one.per_hour == pytest.approx(N1_HOUR + T4_HOUR)
    assert one.cost_usd == pytest.approx(N1_HOUR + T4_HOUR)
    assert one.machine == "n1-standard-4 + 1 × NVIDIA_TESLA_T4"
    doc = one.to_json()
    assert list(doc)[:10] == ["name", "rung", "region", "state", "create_time", "start_time", "end_time",
                              "queued_s", "ran_s", "cost_usd"]
    assert doc["state"] == "JOB_STATE_SUCCEEDED" and doc["start_time"] == at(3)


def test_the_price_is_the_one_plan_and_recovery_use() -> None:
    """Every figure comes from planning.cost (job_per_hour's pricing): the same per hour for any shape."""
    shapes = [[pool(replicas=3)], [pool(gpus=2), pool("n1-standard-8", replicas=4)], [pool("n1-highmem-16")]]
    for pools in shapes:
        for spot in (False, True):
            raw = job("x", JobState.SUCCEEDED, started=0, ended=60, pools=pools, spot=spot)
            assert ledger_job(raw, REGION, NOW).per_hour == pytest.approx(job_per_hour(raw, REGION))


def test_a_running_job_is_priced_up_to_now() -> None:
    raw = job("r", JobState.RUNNING, created=0, started=30)
    assert ledger_job(raw, REGION, T0 + timedelta(minutes=150)).ran_s == 2 * 3600
    assert ledger_job(raw, REGION, T0 + timedelta(minutes=150)).cost_usd == pytest.approx(2 * N1_HOUR)
    assert ledger_job(raw, REGION, T0 + timedelta(minutes=270)).cost_usd == pytest.approx(4 * N1_HOUR)


def test_spot_jobs_at_spot_prices() -> None:
    spot_n1 = prices.machine_price(REGION, "n1-standard-4", prices.SPOT)
    assert spot_n1 is not None and spot_n1.usd_per_hour is not None
    one = ledger_job(job("s", JobState.SUCCEEDED, started=0, ended=120, spot=True), REGION, NOW)
    assert one.pricing == prices.SPOT
    assert one.cost_usd == pytest.approx(2 * spot_n1.usd_per_hour) and (one.cost_usd or 0) < 2 * N1_HOUR


def test_an_unknown_price_is_never_guessed() -> None:
    ran = ledger_job(job("u", JobState.SUCCEEDED, started=0, ended=60, pools=[pool("e2-standard-4")]), REGION, NOW)
    assert ran.per_hour is None and ran.cost_usd is None
    assert [(u.kind, u.name) for u in ran.unknown] == [("machine", "e2-standard-4")]
    never = ledger_job(job("n", JobState.FAILED, ended=5, pools=[pool("e2-standard-4")]), REGION, NOW)
    assert never.cost_usd == 0.0  # it never ran: nothing billed, whatever its machines cost


def test_waits_of_jobs_that_never_started() -> None:
    stocked_out = ledger_job(job("f", JobState.FAILED, created=0, ended=7), REGION, NOW)
    assert stocked_out.queued_s == 420 and stocked_out.ran_s == 0 and stocked_out.cost_usd == 0
    pending = ledger_job(job("p", JobState.PENDING, created=0), REGION, T0 + timedelta(minutes=10))
    assert pending.queued_s == 600 and pending.started is None


# --- keys, attempts, rungs --------------------------------------------------------------------

def test_jobs_grouped_by_key_then_attempt_then_rung() -> None:
    book = ledger(
        job("r0", JobState.FAILED, created=0, ended=1, key="release", rung=0, attempt=0),
        job("r1", JobState.FAILED, created=2, started=3, ended=33, key="release", rung=1, attempt=0),
        job("a1", JobState.SUCCEEDED, created=34, started=35, ended=95, key="release", rung=1, attempt=1),
        job("lone", JobState.SUCCEEDED, created=40, started=41, ended=42),
        job("old", JobState.SUCCEEDED, created=-60, started=-59, ended=-1, key="nightly"),
        job("new", JobState.RUNNING, created=100, started=101, key="nightly"),
    )
    keys = book.keys
    assert [k.key for k in keys] == ["nightly", "release", None]  # the most recently active first; no key last
    nightly, release, none = keys
    assert [(a.attempt, [(j.rung, j.view.name.rsplit("/", 1)[-1]) for j in a.jobs]) for a in release.attempts] == [
        (0, [(0, "r0"), (1, "r1")]), (1, [(1, "a1")])]
    assert release.state is JobState.SUCCEEDED and nightly.state is JobState.RUNNING  # the newest job's
    assert [(a.attempt, len(a.jobs)) for a in nightly.attempts] == [(0, 2)]  # keyed, unlabelled: attempt 0
    assert none.to_json()["key"] is None and none.attempts[0].attempt is None and none.jobs[0].rung is None
    assert release.cost_usd == pytest.approx(1.5 * N1_HOUR)
    doc = book.to_json()
    assert [k["key"] for k in doc["keys"]] == ["nightly", "release", None]
    assert list(doc["keys"][1]) == ["key", "state", "cost_usd", "attempts"]
    assert list(doc["keys"][1]["attempts"][0]) == ["attempt", "jobs"]
    assert NO_KEY == "(no key)"


def test_a_key_s_cost_is_unknown_when_one_of_its_jobs_is_unpriced() -> None:
    book = ledger(job("a", JobState.SUCCEEDED, started=0, ended=60, key="k", attempt=0),
                  job("b", JobState.SUCCEEDED, started=61, ended=62, key="k", attempt=1, pools=[pool("e2-standard-4")]))
    assert book.keys[0].cost_usd is None


# --- the queue wait ----------------------------------------------------------------------------

def test_percentiles_interpolate_between_ranks_as_numpy_does() -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == pytest.approx(2.5)
    assert percentile([1.0, 2.0, 3.0, 4.0], 90) == pytest.approx(3.7)  # numpy.percentile(..., 90)
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], 90) == pytest.approx(9.1)
    assert percentile([7.0], 90) == 7.0 and percentile([], 50) is None


def test_queue_stats_per_machine_and_region() -> None:
    east = "us-east1"
    stats = queue_stats(ledger(
        *(job(f"w{i}", JobState.SUCCEEDED, created=0, started=i, ended=i + 1) for i in (1, 2, 3, 4, 10)),
        job("gpu", JobState.SUCCEEDED, created=0, started=30, ended=40, pools=[pool(gpus=1)]),
        job("pend", JobState.PENDING, created=0),
        job("out", JobState.FAILED, created=0, ended=2),
        job("e", JobState.SUCCEEDED, created=0, started=0.5, ended=3, region=east),
    ).jobs)
    rows = {(s.machine, s.region): s.to_json() for s in stats}
    assert rows[("n1-standard-4", REGION)] == {"machine": "n1-standard-4", "region": REGION, "started": 5,
                                               "waiting": 1, "never_started": 1, "p50_s": 180.0, "p90_s": 456.0}
    assert rows[("n1-standard-4 + 1 × NVIDIA_TESLA_T4", REGION)]["p50_s"] == 1800.0
    assert rows[("n1-standard-4", east)]["p90_s"] == 30.0


# --- spend ----------------------------------------------------------------------------------------

def spend_book() -> Ledger:
    return ledger(
        job("a", JobState.SUCCEEDED, started=0, ended=60, key="k1", labels={"team": "nlp"},
            pools=[pool(gpus=1), pool("n1-standard-8", replicas=2)]),
        job("b", JobState.SUCCEEDED, started=0, ended=120, key="k2", labels={"team": "nlp"}, spot=True),
        job("c", JobState.RUNNING, started=0, labels={"team": "vision"}, region="us-east1"),
        job("u", JobState.SUCCEEDED, started=0, ended=30, key="k1", pools=[pool("e2-standard-4")]),
        job("n", JobState.FAILED, ended=1, key="k2"),
        now=T0 + timedelta(hours=3))


def test_cost_by_key_label_and_region() -> None:
    book = spend_book()
    by_key = cost_report(book, "key")
    groups = {g.group: g for g in by_key.groups}
    a, b, c = (j.cost_usd or 0.0 for j in book.jobs if j.view.name[-1] in "abc")
    assert groups["k1"].usd == pytest.approx(a) and groups["k1"].jobs == 1  # u is unpriced
    assert groups["k2"].jobs == 2 and groups["k2"].usd == pytest.approx(b)  # n never ran: $0
    assert groups[None].usd == pytest.approx(3 * N1_HOUR)  # c runs: up to now, three hours
    assert [u.view.name.rsplit("/", 1)[-1] for u in by_key.unpriced] == ["u"]
    assert by_key.total_usd == pytest.approx(a + b + c)
    assert [g.usd for g in by_key.groups] == sorted((g.usd for g in by_key.groups), reverse=True)
    by_team = {g.group: g.jobs for g in cost_report(book, "label:team").groups}
    assert by_team == {"nlp": 2, "vision": 1, None: 1}
    by_region = {g.group: g.jobs for g in cost_report(book, "region").groups}
    assert by_region == {REGION: 3, "us-east1": 1}
    for by in ("key", "label:team", "region", "machine", "day"):
        assert cost_report(book, by).total_usd == pytest.approx(by_key.total_usd), by
        assert cost_report(book, by).priced == 4


def test_cost_by_machine_splits_a_job_by_its_pools() -> None:
    report = cost_report(spend_book(), "machine")
    groups = {g.group: g for g in report.groups}
    n1_8 = prices.machine_price(REGION, "n1-standard-8")
    assert n1_8 is not None and n1_8.usd_per_hour is not None
    assert groups["n1-standard-8"].usd == pytest.approx(2 * n1_8.usd_per_hour)
    assert groups["n1-standard-8"].hours == pytest.approx(2)  # node-hours: two replicas for an hour
    assert groups["n1-standard-4 + 1 × NVIDIA_TESLA_T4"].usd == pytest.approx(N1_HOUR + T4_HOUR)
    assert groups["n1-standard-4"].jobs == 3  # b, c, n (each once, whatever its pools)


def test_cost_by_day_splits_a_run_at_midnight_utc() -> None:
    """T0 is 22:00 UTC: a run of three hours is two hours on its first day, one on the next."""
    report = cost_report(spend_book(), "day")
    assert [g.group for g in report.groups] == ["2026-11-20", "2026-11-21"]
    first, second = report.groups
    assert second.hours == pytest.approx(1.0)  # c, the running job, from midnight to now
    assert first.hours == pytest.approx(1 + 2 + 2)  # a, b, and c's first two hours
    assert first.jobs == 4 and second.jobs == 1  # n never ran: counted on its create day, 0 h
    assert report.total_usd == pytest.approx(cost_report(spend_book(), "key").total_usd)


def test_cost_json_and_csv() -> None:
    report = cost_report(spend_book(), "key")
    doc = report.to_json()
    assert list(doc)[:6] == ["currency", "estimated", "since", "groups", "total_usd", "unpriced"]
    assert doc["currency"] == "USD" and doc["estimated"] is True
    assert list(doc["groups"][0]) == ["group", "jobs", "hours", "usd"]
    (unpriced,) = doc["unpriced"]
    assert unpriced["unknown"][0]["name"] == "e2-standard-4" and unpriced["hours"] == 0.5
    out = io.StringIO()
    report.write_csv(out)
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows[0] == ["key", "jobs", "hours", "usd"]
    assert [r[0] for r in rows[1:]] == [g.group or "" for g in report.groups] + [TOTAL, f"{UNPRICED} {unpriced['name']}"]
    assert float(rows[-2][3]) == pytest.approx(report.total_usd) and rows[-1][3] == ""


def test_a_grouping_is_one_of_the_list() -> None:
    for good in ("key", "machine", "region", "day", "label:team"):
        assert check_by(good) == good
    for bad in ("label:", "team", "week"):
        with pytest.raises(errors.UsageError, match="--by takes"):
            check_by(bad)


# --- what is listed --------------------------------------------------------------------------------

def test_the_server_filter_narrows_by_labels_and_create_time() -> None:
    query = Query("p", (REGION,), key="Release 1", labels={"team": "nlp"}, since=T0)
    assert query.filter() == (f'labels.team="nlp" AND labels.vxtrain_idempotency_key="{label_value("Release 1")}" '
                              f'AND create_time>="{format_time(T0)}"')
    assert Query("p", (REGION,)).filter() == ""
    running = Query("p", (REGION,), states=frozenset({JobState.RUNNING}))
    book = ledger(job("a", JobState.RUNNING), job("b", JobState.FAILED))
    assert [j.view.name[-1] for j in book.jobs if running.keeps(j.view)] == ["a"]
