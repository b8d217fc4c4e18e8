"""The bandwidth curve (vxtrain.planning.curve): all-reduce time per Reduction Server replica
count, from the bandwidth plan's own model, with the ring, the cap and the plan's point."""
from __future__ import annotations

from typing import Any

import pytest

from vxtrain import model
from vxtrain.planning import bandwidth, curve as curves
from vxtrain.planning.curve import Curve, NoCurve

V100X8 = {"type": "NVIDIA_TESLA_V100", "count": 8}
BIG = {"machine_type": "n1-highmem-96", "accelerator": V100X8}
GB = 1.3e9


def job(workers: int = 4, **pools: Any) -> model.Job:
    """Google's Reduction Server example (chief + 4 workers of n1-highmem-96 with 8 × V100)."""
    data: dict[str, Any] = {"display_name": "bert", "region": "us-central1",
                            "defaults": {"image": "gcr.io/p/train:1"}, "chief": dict(BIG)}
    if workers:
        data["workers"] = {"replicas": workers, **BIG}
    data.update(pools)
    return model.build(data)


def of(job: model.Job, gradient: float | None = None) -> Curve | NoCurve:
    plan = bandwidth.plan(job, gradient_bytes=gradient)
    return curves.curve(plan, gradient)


def test_google_s_example_chosen_point_and_ring_are_the_plan_s_estimate() -> None:
    example = job(reduction_server={"replicas": "auto"})
    plan = bandwidth.plan(example, gradient_bytes=GB)
    found = curves.curve(plan, GB)
    assert isinstance(found, Curve) and plan.allreduce is not None and plan.reduction_server is not None
    assert (found.training_nodes, found.node_gbps, found.machine_type, found.gbps_per_replica) == (
        5, 100, "n1-highcpu-16", 32)
    assert found.chosen is not None and found.chosen.replicas == 16
    assert found.chosen.seconds == plan.allreduce.reduction_server_seconds
    assert found.ring_seconds == plan.allreduce.ring_seconds
    assert found.cap_replicas == plan.reduction_server.replicas_needed == 16
    assert found.floor_seconds == pytest.approx(GB / 12.5e9)
    assert found.floor_of_ring == pytest.approx(5 / 8)


def test_points_fall_until_the_cap_then_stay_at_the_floor() -> None:
    found = of(job(reduction_server={"replicas": "auto"}), GB)
    assert isinstance(found, Curve)
    assert [p.replicas for p in found.points] == list(range(1, 21))  # 16 + a quarter
    seconds = [p.seconds for p in found.points]
    assert all(s is not None for s in seconds)
    assert seconds == sorted(seconds, reverse=True)
    for point in found.points:
        assert point.keeps_up is (point.replicas >= 16)
        expected = max(GB / 12.5e9, 5 * GB / (point.replicas * 4e9))  # N · S / B₂ below the cap
        assert point.seconds == pytest.approx(expected, rel=1e-12)
        assert point.of_ring == pytest.approx(expected / found.ring_seconds)  # type: ignore[operator]


def test_without_a_gradient_size_only_the_shares_of_the_ring_are_given() -> None:
    relative, absolute = of(job(reduction_server={"replicas": "auto"})), of(job(reduction_server={"replicas": "auto"}), GB)
    assert isinstance(relative, Curve) and isinstance(absolute, Curve)
    assert relative.ring_seconds is None and relative.floor_seconds is None
    assert all(p.seconds is None for p in relative.points)
    assert [p.of_ring for p in relative.points] == pytest.approx([p.of_ring for p in absolute.points])


def test_a_short_pool_is_drawn_where_it_is() -> None:
    found = of(job(reduction_server={"replicas": 4}), GB)
    assert isinstance(found, Curve) and found.chosen is not None
    assert (found.chosen.replicas, found.chosen.keeps_up, found.cap_replicas) == (4, False, 16)
    assert found.chosen.seconds == pytest.approx(5 * GB / (4 * 4e9))


def test_a_big_cap_is_sampled_keeping_the_cap_and_the_chosen_count() -> None:
    found = of(job(workers=99, reduction_server={"replicas": 77}), GB)
    assert isinstance(found, Curve)
    counts = [p.replicas for p in found.points]
    assert found.cap_replicas == 313  # 100 nodes × 100 Gbps / 32
    assert {1, 77, 313} <= set(counts) and len(counts) <= curves.MAX_POINTS + 3
    assert counts == sorted(set(counts)) and counts[-1] > 313


def test_a_job_without_pool_2_gets_the_curve_of_the_default_machine() -> None:
    found = of(job(), GB)
    assert isinstance(found, Curve)
    assert (found.planned, found.chosen, found.machine_type) == (False, None, model.DEFAULT_RS_MACHINE)


def test_two_nodes_cannot_beat_a_ring() -> None:
    found = of(job(workers=1), GB)
    assert isinstance(found, Curve) and found.floor_of_ring == pytest.approx(1.0)


@pytest.mark.parametrize(("data", "reason"), [
    ({"workers": 0}, "one training node"),
    ({"parameter_servers": {"replicas": 2, "machine_type": "n1-standard-8"}}, "parameter servers"),
])
def test_no_curve_says_why(data: dict[str, Any], reason: str) -> None:
    workers = data.pop("workers", 4)
    found = of(job(workers=workers, **data), GB)
    assert isinstance(found, NoCurve) and reason in found.reason


def test_gpudirect_nodes_without_a_reduction_server_get_no_what_if_curve() -> None:
    a3 = {"machine_type": "a3-megagpu-8g", "accelerator": {"type": "NVIDIA_H100_MEGA_80GB", "count": 8}}
    data = {"display_name": "a3", "region": "us-central1", "defaults": {"image": "gcr.io/p/t:1", **a3},
            "chief": {}, "workers": {"replicas": 3}}
    found = of(model.build(data), GB)
    assert isinstance(found, NoCurve) and "gpudirect-tcpxo" in found.reason
