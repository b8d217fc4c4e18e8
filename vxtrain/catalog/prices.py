"""Vertex AI custom-training prices per region: ``prices.csv`` beside this file.

Loaded once and lazily into a dict, like the rest of the catalog (only
``plan`` and the cost guardrail need prices). A price the file does not have
is ``None``: the planner reports it as unknown, never guessed and never 0.
README.md says where the figures come from and what they include.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from vxtrain.catalog.tables import number, rows

MACHINE = "machine"
ACCELERATOR = "accelerator"
ON_DEMAND, SPOT, FLEX_START = "on_demand", "spot", "flex_start"


@dataclass(frozen=True)
class Price:
    """One row: USD per node-hour (machine: vCPUs and memory) or per accelerator-hour, in
    one region, under one pricing (on-demand, Spot or Dynamic Workload Scheduler Flex-Start).

    ``usd_per_hour`` is Compute Engine's price for that pricing plus Vertex AI's
    management fee; both parts are kept when the source gives or implies them.
    """

    region: str
    kind: str
    name: str
    pricing: str
    usd_per_hour: float
    compute_engine_usd_per_hour: float | None
    management_fee_usd_per_hour: float | None
    confidence: str
    source: str
    as_of: str


def _price(row: dict[str, str]) -> Price:
    return Price(region=row["region"], kind=row["kind"], name=row["name"], pricing=row["pricing"],
                 usd_per_hour=float(row["usd_per_hour"]),
                 compute_engine_usd_per_hour=number(row["compute_engine_usd_per_hour"]),
                 management_fee_usd_per_hour=number(row["management_fee_usd_per_hour"]),
                 confidence=row["confidence"], source=row["source"], as_of=row["as_of"])


@functools.cache
def _prices() -> dict[tuple[str, str, str, str], Price]:
    return {(r["region"], r["kind"], r["name"], r["pricing"]): _price(r) for r in rows("prices.csv")}


def price(region: str, kind: str, name: str, pricing: str = ON_DEMAND) -> Price | None:
    """The price of machine type or accelerator ``name`` in ``region`` under ``pricing``
    (None: not in the catalog)."""
    return _prices().get((region, kind, name, pricing))


def machine_price(region: str, machine_type: str, pricing: str = ON_DEMAND) -> Price | None:
    """Vertex AI's price of one node of ``machine_type`` in ``region``, accelerators excluded."""
    return price(region, MACHINE, machine_type, pricing)


def accelerator_price(region: str, accelerator_type: str, pricing: str = ON_DEMAND) -> Price | None:
    """Vertex AI's price of one accelerator (``NVIDIA_H100_80GB``…) in ``region``."""
    return price(region, ACCELERATOR, accelerator_type, pricing)


def all_prices() -> list[Price]:
    """Every row of the price catalog, in file order."""
    return list(_prices().values())


__all__ = [
    "ACCELERATOR", "FLEX_START", "MACHINE", "ON_DEMAND", "Price", "SPOT", "accelerator_price", "all_prices",
    "machine_price", "price",
]
