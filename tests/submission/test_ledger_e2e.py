"""``vxtrain jobs`` and ``vxtrain cost`` against the emulator, after a fallback ladder and a
recovery (the emulator's ``--stockout`` and ``--preempt``), through the real aiplatform
client: text, JSON and CSV; the grouping; the filters; jobs without a key; a Spot job, an
unpriced one and a running one; the List calls counted by the emulator; the queue wait's
percentiles. Nothing here mocks vxtrain.
"""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.incli import run
from tests.polling import wait_for
from tests.submission.helpers import job as python_job
from vxtrain import api as vx
from vxtrain.backends import open_backend
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.catalog import prices
from vxtrain.submission.ledger import percentile
from vxtrain.submission.names import parent_of
from vxtrain.vocab.kinds import CUSTOM, JobState
from vxtrain.vocab.timestamps import format_time

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "p"
CENTRAL, EAST = "us-central1", "us-east1"  # the release spec's rungs: central stocks out, east preempts once
UNPRICED = "us-south1"  # the catalog has no n1-standard-4 price there
PAGED = "asia-east1"  # 201 jobs: three pages of the emulator's 100
IMAGE = "us-docker.pkg.dev/p/r/train:1"
T4 = "n1-standard-4 + 1 × NVIDIA_TESLA_T4"


@dataclass
class World:
    handle: EmulatorHandle
    release: Path
    between: datetime  # after the release's jobs, before every other
    spot: str  # the Spot job's name
    lone: str  # the job without a key
    unpriced: str


def _spec(folder: Path, name: str, **extra: Any) -> Path:
    text = {"display_name": name, "project": PROJECT,
            "chief": {"machine_type": "n1-standard-4", "image": IMAGE, "command": ["true"]}, **extra}
    path = folder / f"{name}.yaml"
    path.write_text(json.dumps(text))
    return path


def _create(handle: EmulatorHandle, region: str, labels: dict[str, str] | None = None) -> str:
    """A job vxtrain did not submit (no key), created through the backend; its name."""
    with open_backend(region=region, endpoint=handle.address) as backend:
        body = {**python_job(), "labels": labels or {}}
        return str(backend.create(CUSTOM, parent_of(PROJECT, region), body)["name"])


def _ended(handle: EmulatorHandle, name: str) -> None:
    with open_backend(endpoint=handle.address) as backend:
        wait_for(lambda: JobState.of(backend.get(CUSTOM, name)["state"]).terminal, 10, f"{name} to end")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The release (key release-1): rung 0 in us-central1 stocks out before it starts, rung 1 in
    us-east1 loses its machines after it started, attempt 1 on rung 1 succeeds. Then a Spot job
    (spot-1), a job without a key, an unpriced job, and 201 jobs in asia-east1."""
    handle = start_emulator(simulate_seconds=0.4, environ={}, out=io.StringIO(), stockout_after=0.2,
                            stockout=[CENTRAL], preempt=[f"{EAST}:0.1:1"])
    try:
        folder = tmp_path_factory.mktemp("ledger")
        release = _spec(folder, "release", region=CENTRAL, labels={"team": "nlp"},
                        chief={"machine_type": "n1-standard-4", "image": IMAGE, "command": ["true"],
                               "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 1}},
                        fallback=[{"region": EAST}], recovery={"max_recoveries": 2, "strategy": "same"})
        done = vx.submit(release, endpoint=handle.address, idempotency_key="release-1", wait=True)
        assert [(a["attempt"], a["rung"], a["outcome"]) for a in done["attempts"]] == [
            (0, 0, "stockout"), (0, 1, "preempted"), (1, 1, "succeeded")], done["attempts"]
        between = datetime.now(timezone.utc)
        spot = vx.submit(_spec(folder, "spot", region=EAST, labels={"team": "vision"},
                               scheduling={"strategy": "SPOT"}),
                         endpoint=handle.address, idempotency_key="spot-1", wait=True)["name"]
        lone = _create(handle, EAST, {"team": "nlp"})
        unpriced = _create(handle, UNPRICED)
        for name in (lone, unpriced):
            _ended(handle, name)
        for _ in range(201):
            _create(handle, PAGED)
        yield World(handle, release, between, spot, lone, unpriced)
    finally:
        handle.stop(grace=None)


def jobs(capsys: pytest.CaptureFixture[str], world: World, *flags: str) -> tuple[int, Any, str]:
    return run(capsys, "jobs", "--endpoint", world.handle.address, "--project", PROJECT, *flags)


def both(*flags: str) -> tuple[str, ...]:
    return ("--region", CENTRAL, "--region", EAST, *flags)


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {j["name"]: j for k in doc["keys"] for a in k["attempts"] for j in a["jobs"]}


def short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


# --- jobs ----------------------------------------------------------------------------------

def test_keys_attempts_and_rungs_after_a_ladder_and_a_recovery(capsys: pytest.CaptureFixture[str],
                                                               world: World) -> None:
    code, doc, err = jobs(capsys, world, *both("-o", "json"))
    assert code == 0, err
    assert [k["key"] for k in doc["keys"]] == ["spot-1", "release-1", None]  # newest first; no key last
    release = doc["keys"][1]
    assert release["state"] == "JOB_STATE_SUCCEEDED"
    shape = [(a["attempt"], [(j["rung"], j["region"], j["state"]) for j in a["jobs"]]) for a in release["attempts"]]
    assert shape == [(0, [(0, CENTRAL, "JOB_STATE_FAILED"), (1, EAST, "JOB_STATE_FAILED")]),
                     (1, [(1, EAST, "JOB_STATE_SUCCEEDED")])]
    stocked_out, preempted = release["attempts"][0]["jobs"]
    assert stocked_out["start_time"] is None and stocked_out["ran_s"] == 0 and stocked_out["cost_usd"] == 0
    assert stocked_out["queued_s"] > 0 and stocked_out["end_time"]
    assert preempted["start_time"] and preempted["ran_s"] > 0 and preempted["cost_usd"] > 0
    for one in by_name(doc).values():
        assert list(one)[:10] == ["name", "rung", "region", "state", "create_time", "start_time", "end_time",
                                  "queued_s", "ran_s", "cost_usd"]
        created, started = (datetime.fromisoformat(one[k].replace("Z", "+00:00")) if one[k] else None
                            for k in ("create_time", "start_time"))
        if started is not None and created is not None:
            assert one["queued_s"] == pytest.approx((started - created).total_seconds(), abs=0.002)
        if one["per_hour"] is not None:
            assert one["cost_usd"] == pytest.approx(one["per_hour"] * one["ran_s"] / 3600, rel=1e-4, abs=1e-8)
    assert release["cost_usd"] == pytest.approx(sum(j["cost_usd"] for a in release["attempts"] for j in a["jobs"]))
    (none,) = [k for k in doc["keys"] if k["key"] is None]
    assert [j["name"] for a in none["attempts"] for j in a["jobs"]] == [world.lone]
    assert none["attempts"][0]["attempt"] is None and doc["regions"] == [CENTRAL, EAST]


def test_a_spot_job_at_spot_prices(capsys: pytest.CaptureFixture[str], world: World) -> None:
    _, doc, _ = jobs(capsys, world, *both("-o", "json", "--key", "spot-1"))
    spot = by_name(doc)[world.spot]
    price = prices.machine_price(EAST, "n1-standard-4", prices.SPOT)
    assert price is not None and spot["pricing"] == "spot" and spot["per_hour"] == pytest.approx(price.usd_per_hour)


def test_the_text_table(capsys: pytest.CaptureFixture[str], world: World) -> None:
    code, out, err = jobs(capsys, world, *both())
    assert code == 0, err
    assert "release-1 (3 jobs)" in out and "spot-1 (1 job)" in out and "(no key) (1 job)" in out
    _, doc, _ = jobs(capsys, world, *both("-o", "json"))
    for name in by_name(doc):
        assert short(name) in out
    assert "SUCCEEDED" in out and "FAILED" in out and "Estimated: list prices × run time" in out
    assert out.index("spot-1") < out.index("release-1") < out.index("(no key)")
    assert "Jobs in p (us-central1, us-east1) on the emulator, created since " in out
    assert "5 jobs: 2 keys and 1 job without a key; about $" in out


def test_filters(capsys: pytest.CaptureFixture[str], world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    def keys(*flags: str) -> list[str | None]:
        code, doc, err = jobs(capsys, world, "-o", "json", *flags)
        assert code == 0, err
        return [k["key"] for k in doc["keys"]]

    assert keys(*both("--key", "release-1")) == ["release-1"]
    assert keys(*both("--label", "team=nlp")) == ["release-1", None]
    assert keys(*both("--label", "team=nlp", "--label", "vxtrain_attempt=1")) == ["release-1"]
    assert keys(*both("--since", format_time(world.between))) == ["spot-1", None]
    assert keys(*both("--since", "1h")) == ["spot-1", "release-1", None]
    _, doc, _ = jobs(capsys, world, "-o", "json", *both("--state", "failed"))
    assert {j["state"] for j in by_name(doc).values()} == {"JOB_STATE_FAILED"} and len(by_name(doc)) == 2
    _, doc, _ = jobs(capsys, world, "-o", "json", *both("--state", "FAILED", "--state", "JOB_STATE_SUCCEEDED"))
    assert len(by_name(doc)) == 5
    assert keys("--region", EAST, "--region", UNPRICED) == ["spot-1", "release-1", None]
    # --spec: the regions of its rungs (its own, then fallback's)
    _, doc, _ = jobs(capsys, world, "-o", "json", "--spec", str(world.release))
    assert doc["regions"] == [CENTRAL, EAST] and len(by_name(doc)) == 5
    # neither: the default region (the environment's, else the emulator's stand-in)
    monkeypatch.setenv("CLOUD_ML_REGION", UNPRICED)
    _, doc, _ = jobs(capsys, world, "-o", "json")
    assert doc["regions"] == [UNPRICED] and list(by_name(doc)) == [world.unpriced]


def test_bad_flags_are_usage_errors(capsys: pytest.CaptureFixture[str], world: World) -> None:
    calls = world.handle.calls.snapshot()
    for flags in (("--state", "sleeping"), ("--since", "last week"), ("--label", "team")):
        code, _, err = jobs(capsys, world, *both(*flags))
        assert code == 2, (flags, err)
    code, _, err = run(capsys, "cost", "--endpoint", world.handle.address, "--project", PROJECT,
                       *both("--by", "week"))
    assert code == 2 and "--by takes key, machine, region, day or label:NAME" in err
    assert world.handle.calls.snapshot() == calls  # refused before any call


def test_one_paged_list_series_per_region_and_kind(capsys: pytest.CaptureFixture[str], world: World) -> None:
    """docs/performance.md, "The ledger's calls": per region, ⌈jobs / 100⌉ ListCustomJobs (at least
    one) and as many ListHyperparameterTuningJobs; nothing else."""
    before = world.handle.calls.snapshot()
    code, doc, err = jobs(capsys, world, *both("--region", PAGED, "-o", "json"))
    assert code == 0, err
    after = world.handle.calls.snapshot()
    spent = {m: after[m] - before.get(m, 0) for m in after if after[m] != before.get(m, 0)}
    assert spent == {"ListCustomJobs": 1 + 1 + 3, "ListHyperparameterTuningJobs": 3}
    (paged,) = [k for k in doc["keys"] if k["key"] is None]
    assert sum(len(a["jobs"]) for a in paged["attempts"]) == 1 + 201


def test_queue_wait_percentiles(capsys: pytest.CaptureFixture[str], world: World) -> None:
    code, doc, err = jobs(capsys, world, *both("--stats", "-o", "json"))
    assert code == 0, err
    rows = {(r["machine"], r["region"]): r for r in doc["stats"]}
    assert set(rows) == {(T4, CENTRAL), (T4, EAST), ("n1-standard-4", EAST)}
    assert rows[T4, CENTRAL]["started"] == 0 and rows[T4, CENTRAL]["never_started"] == 1
    assert rows[T4, CENTRAL]["p50_s"] is None
    _, listed, _ = jobs(capsys, world, *both("-o", "json"))
    waits = [j["queued_s"] for j in by_name(listed).values() if j["machine"] == T4 and j["region"] == EAST]
    assert rows[T4, EAST]["started"] == 2
    assert rows[T4, EAST]["p50_s"] == pytest.approx(percentile(waits, 50), abs=0.002)
    assert rows[T4, EAST]["p90_s"] == pytest.approx(percentile(waits, 90), abs=0.002)
    assert rows["n1-standard-4", EAST]["started"] == 2  # the Spot job and the one without a key
    code, out, _ = jobs(capsys, world, *both("--stats"))
    assert "Queue wait (create → start)" in out and "p50" in out and "p90" in out and T4 in out


# --- cost ------------------------------------------------------------------------------------

def cost(capsys: pytest.CaptureFixture[str], world: World, *flags: str) -> tuple[int, Any, str]:
    return run(capsys, "cost", "--endpoint", world.handle.address, "--project", PROJECT, "--region", CENTRAL,
               "--region", EAST, "--region", UNPRICED, *flags)


def test_cost_json_by_key_with_the_unpriced_job_listed(capsys: pytest.CaptureFixture[str], world: World) -> None:
    code, doc, err = cost(capsys, world, "-o", "json")
    assert code == 0, err
    assert doc["currency"] == "USD" and doc["estimated"] is True and doc["since"]
    assert {g["group"] for g in doc["groups"]} == {
        "release-1", "spot-1", None}
    assert [u["name"] for u in doc["unpriced"]] == [world.unpriced]
    assert doc["unpriced"][0]["unknown"][0] == {"pool": 0, "role": "chief", "kind": "machine",
                                               "name": "n1-standard-4", "region": UNPRICED,
                                               "pricing": "on_demand"}
    _, listed, _ = jobs(capsys, world, "--region", CENTRAL, "--region", EAST, "--region", UNPRICED, "-o", "json",
                        "--since", "30d")
    priced = [j["cost_usd"] for j in by_name(listed).values() if j["cost_usd"] is not None]
    assert doc["total_usd"] == pytest.approx(sum(priced)) and doc["total_usd"] > 0
    release = next(g for g in doc["groups"] if g["group"] == "release-1")
    assert release["jobs"] == 3 and release["usd"] == pytest.approx(
        next(k for k in listed["keys"] if k["key"] == "release-1")["cost_usd"])


@pytest.mark.parametrize("by", ["label:team", "machine", "region", "day"])
def test_cost_by_each_grouping_adds_up_to_the_same_total(capsys: pytest.CaptureFixture[str], world: World,
                                                         by: str) -> None:
    _, by_key, _ = cost(capsys, world, "-o", "json")
    code, doc, err = cost(capsys, world, "-o", "json", "--by", by)
    assert code == 0, err
    assert doc["by"] == by and doc["total_usd"] == pytest.approx(by_key["total_usd"])
    groups = {g["group"] for g in doc["groups"]}
    expected = {"label:team": {"nlp", "vision"}, "machine": {T4, "n1-standard-4"}, "region": {CENTRAL, EAST},
                "day": {datetime.now(timezone.utc).date().isoformat()}}[by]
    assert groups >= expected


def test_cost_csv_and_text(capsys: pytest.CaptureFixture[str], world: World) -> None:
    _, doc, _ = cost(capsys, world, "-o", "json", "--by", "region")
    code, out, err = cost(capsys, world, "-o", "csv", "--by", "region")
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["region", "jobs", "hours", "usd"]
    listed = rows[1:1 + len(doc["groups"])]
    assert [(r[0], int(r[1])) for r in listed] == [(g["group"], g["jobs"]) for g in doc["groups"]]
    assert [float(r[3]) for r in listed] == pytest.approx([g["usd"] for g in doc["groups"]], abs=1e-8)
    assert rows[-2][0] == "(total)" and float(rows[-2][3]) == pytest.approx(doc["total_usd"], abs=1e-8)
    assert rows[-1] == [f"(unpriced) {world.unpriced}", "1", rows[-1][2], ""]
    code, out, err = cost(capsys, world, "--by", "region")
    assert code == 0, err
    assert "Estimated spend by region" in out and EAST in out and "total" in out
    assert f"unpriced: {world.unpriced}" in out and "no on_demand price for machine n1-standard-4" in out


# --- a running job ------------------------------------------------------------------------------

@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[EmulatorHandle, str]]:
    """An emulator that runs its jobs here, and a job of it that sleeps for a minute."""
    handle = start_emulator(environ={}, out=io.StringIO())
    try:
        with open_backend(endpoint=handle.address) as backend:
            body = {**python_job("import time; time.sleep(60)"), "labels": {"vxtrain_idempotency_key": "long"}}
            name = str(backend.create(CUSTOM, parent_of(PROJECT, CENTRAL), body)["name"])
            wait_for(lambda: backend.get(CUSTOM, name).get("startTime"), 30, "the job to start")
            yield handle, name
            backend.cancel(CUSTOM, name)
    finally:
        handle.stop(grace=None)


def test_a_running_job_is_priced_up_to_now(capsys: pytest.CaptureFixture[str],
                                           running: tuple[EmulatorHandle, str]) -> None:
    handle, name = running

    def read() -> dict[str, Any]:
        code, doc, err = run(capsys, "jobs", "--endpoint", handle.address, "--project", PROJECT, "--region", CENTRAL,
                             "-o", "json")
        assert code == 0, err
        return by_name(doc)[name]

    first = read()
    assert first["state"] == "JOB_STATE_RUNNING" and first["end_time"] is None and first["ran_s"] > 0
    assert first["cost_usd"] == pytest.approx(first["per_hour"] * first["ran_s"] / 3600, abs=1e-8)
    second = wait_for(lambda: (doc := read())["ran_s"] > first["ran_s"] + 0.2 and doc, 10, "the run to go on")
    assert second["cost_usd"] > first["cost_usd"]
    code, doc, _ = run(capsys, "cost", "--endpoint", handle.address, "--project", PROJECT, "--region", CENTRAL,
                       "-o", "json")
    assert doc["groups"][0]["group"] == "long" and doc["total_usd"] >= second["cost_usd"]


# --- the cold start --------------------------------------------------------------------------

def test_validate_and_plan_never_load_the_ledger() -> None:
    example = ROOT / "configs" / "examples" / "quickstart.yaml"
    code = ("import sys; from vxtrain.cli import main; "
            f"main(['validate', {str(example)!r}]); main(['plan', {str(example)!r}]); "
            "print([m for m in sys.modules if m.endswith('.ledger')])")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0 and res.stdout.strip().splitlines()[-1] == "[]", res.stdout + res.stderr
