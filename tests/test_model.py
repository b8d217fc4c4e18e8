"""Facts vxtrain.model is the one home of: where a pool's key was written (pool or
``defaults``), and the duration syntax (the schema, the job model and ``logs --since``)."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from vxtrain import model
from vxtrain.errors import UsageError
from vxtrain.joblogs import parse_since
from vxtrain.validation.schema import schema

DATA: dict[str, Any] = {
    "defaults": {"image": "i", "machine_type": "n1-standard-4", "env": {"A": "1", "B": "2"}},
    "chief": {"machine_type": "n1-standard-8", "env": {"B": "3"}},
    "workers": {"env": "not a mapping"},
    "reduction_server": {"replicas": 2},
}


@pytest.mark.parametrize(("role", "keys", "where"), [
    ("chief", ("machine_type",), ("chief", "machine_type")),  # the pool's own beats defaults
    ("chief", ("image",), ("defaults", "image")),  # inherited
    ("chief", ("accelerator", "type"), None),  # written nowhere
    ("chief", ("env", "B"), ("chief", "env", "B")),  # env merges name by name
    ("chief", ("env", "A"), ("defaults", "env", "A")),
    ("chief", ("env",), ("chief", "env")),
    ("workers", ("env", "A"), ("defaults", "env", "A")),
    ("reduction_server", ("machine_type",), None),  # Reduction Server never takes defaults
    ("reduction_server", ("replicas",), ("reduction_server", "replicas")),
    ("evaluators", ("image",), ("defaults", "image")),
])
def test_written_at(role: str, keys: tuple[str, ...], where: tuple[str, ...] | None) -> None:
    assert model.written_at(DATA, role, *keys) == where


def test_written_at_agrees_with_the_merged_pools() -> None:
    job = model.build(DATA)
    chief = job.pools["chief"]
    assert (chief.machine_type, chief.image, chief.env) == ("n1-standard-8", "i", {"A": "1", "B": "3"})
    assert job.pools["reduction_server"].image is None


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90), ("30m", 1800), ("12h", 43200), ("7d", 604800), ("1.5h", 5400), (" 2 m ", 120), ("45", 45),
    ("", None), ("m", None), ("-5s", None), ("1w", None), ("10 minutes", None),
])
def test_the_duration_syntax(text: str, seconds: int | None) -> None:
    assert model.parse_duration(text) == seconds


@pytest.mark.parametrize("value", ["99999999999d", "9" * 400 + "d", 315_576_000_001, float("inf"), float("nan"),
                                   -1, "5m30s"])
def test_a_duration_no_protobuf_duration_carries_is_not_read(value: object) -> None:
    assert model.parse_duration(value) is None


def test_the_longest_duration_is_protobufs() -> None:
    assert model.parse_duration(model.DURATION_MAX_SECONDS) == 315_576_000_000
    assert model.parse_duration(f"{model.DURATION_MAX_SECONDS}s") == model.DURATION_MAX_SECONDS
    assert model.duration_too_long(model.DURATION_MAX_SECONDS) is None
    assert "315,576,000,000 s" in (model.duration_too_long(model.DURATION_MAX_SECONDS + 1) or "")


def test_an_integral_float_count_is_that_integer_never_dropped() -> None:
    job = model.build({"display_name": "j", "chief": {"image": "i"}, "workers": {"image": "i", "replicas": 8.0}})
    assert job.pools["workers"].replicas == 8
    job = model.build({"display_name": "j", "chief": {"image": "i"}, "workers": {"image": "i", "replicas": 8.5}})
    assert job.pools["workers"].replicas is None  # the schema refuses it


def test_the_schema_accepts_the_durations_the_model_reads() -> None:
    timeout = schema()["properties"]["scheduling"]["properties"]["timeout"]
    assert timeout["pattern"] == model.DURATION_PATTERN
    assert model.DURATION_EXAMPLES in timeout["x-accepts"]


def test_since_takes_the_same_durations_but_always_with_a_unit() -> None:
    now = datetime(2026, 1, 2, tzinfo=timezone.utc)
    assert parse_since("1.5h", now) == parse_since("90m", now) == "2026-01-01T22:30:00.000000Z"
    assert parse_since("1d", now).startswith("2026-01-01T00:00:00")
    with pytest.raises(UsageError, match="--since takes a duration"):
        parse_since("45", now)
    for text in ("99999999999d", "9" * 400 + "d", "800000d"):
        with pytest.raises(UsageError, match="before the year 1"):
            parse_since(text, now)


# --- what extra: sets in place of tpu_topology, reservation, persistent_resource ----------

EXTRA_TPU = {"display_name": "j", "chief": {"machine_type": "ct5lp-hightpu-1t", "tpu_topology": "1x1"},
             "extra": {"jobSpec": {"persistentResourceId": "from-extra", "workerPoolSpecs": [{"machineSpec": {
                 "tpuTopology": "16x16",
                 "reservationAffinity": {"reservationAffinityType": "SPECIFIC_RESERVATION",
                                         "key": "other/key"}}}]}}}


def test_extra_machine_spec_fields_are_what_the_model_holds_and_where_they_were_written() -> None:
    job = model.build(EXTRA_TPU)
    chief = job.pools["chief"]
    assert chief.tpu_topology == "16x16" and job.persistent_resource == "from-extra"
    assert chief.reservation == model.Reservation("specific", None, "other/key")
    pool_spec = ("extra", "jobSpec", "workerPoolSpecs", 0, "machineSpec")
    assert model.written_at(EXTRA_TPU, "chief", "tpu_topology") == (*pool_spec, "tpuTopology")
    assert model.written_at(EXTRA_TPU, "chief", "reservation", "name") == (
        *pool_spec, "reservationAffinity", "values", 0)
    assert model.job_written_at(EXTRA_TPU, "persistent_resource") == ("extra", "jobSpec", "persistentResourceId")


def test_without_extra_the_native_keys_are_where_they_were_written() -> None:
    data = {"display_name": "j", "persistent_resource": "pool", "defaults": {"reservation": {"affinity": "any"}},
            "chief": {"machine_type": "ct5lp-hightpu-1t", "tpu_topology": "1x1"}}
    job = model.build(data)
    assert job.pools["chief"].reservation == model.Reservation("any") and job.persistent_resource == "pool"
    assert model.written_at(data, "chief", "tpu_topology") == ("chief", "tpu_topology")
    assert model.written_at(data, "chief", "reservation", "affinity") == ("defaults", "reservation", "affinity")
    assert model.job_written_at(data, "persistent_resource") == ("persistent_resource",)
    assert model.job_written_at(data, "network") is None
