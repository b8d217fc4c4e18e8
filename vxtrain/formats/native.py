"""The native document ``vxtrain convert --to native`` writes: clean and factored."""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vxtrain.loading.document import NativeSpec
from vxtrain.loading.fallback import FALLBACK_KEY
from vxtrain.model import merge_defaults

if TYPE_CHECKING:  # annotations only (validate's path)
    from vxtrain.vocab.jobjson import JsonObject

#: Pools that take ``defaults`` (the Reduction Server pool never does: a known bug class in peer tools).
TRAINING_POOLS: tuple[str, ...] = ("chief", "workers", "parameter_servers", "evaluators")

#: Every pool key: one written as ``{}`` is still a pool (one replica, all from ``defaults``).
POOLS: tuple[str, ...] = (*TRAINING_POOLS, "reduction_server")

#: Pool fields ``native_document`` moves into ``defaults`` when every training pool agrees.
FACTORED_FIELDS: tuple[str, ...] = ("image", "python_package", "command", "args", "env", "disk", "nfs_mounts",
                                    "lustre_mounts")

#: Key order of a native document written by ``native_document``.
NATIVE_ORDER: tuple[str, ...] = (
    "display_name", "project", "region", "labels", "service_account", "network", "reserved_ip_ranges",
    "psc_interface", "base_output_dir", "tensorboard", "enable_web_access", "enable_dashboard_access", "experiment",
    "experiment_run", "protected_artifact_location_id", "scheduling", "defaults", "chief", "workers",
    "parameter_servers", "reduction_server", "evaluators", "local", "study", "extra",
)



def native_document(native: NativeSpec) -> JsonObject:
    """A clean native dict (the user's YAML document, values as written): empty values dropped,
    shared pool fields moved into ``defaults``.

    A ``fallback:`` list is kept as written, its ``null``s included (each deletes a key
    for its rung), and then the pools and ``defaults`` are left as written too: an entry
    is merged over the spec as it stands, so moving a field between a pool and
    ``defaults`` would change what an entry that sets it does.

    Either way a pool written as ``{}`` stays, and a literal ``${`` is written ``$${``:
    the document validates and compiles to the same job as its input (tests/test_convert.py)."""
    data = copy.deepcopy(native.data)
    ladder = data.pop(FALLBACK_KEY, None)
    if ladder is not None:
        written: JsonObject = _escape_references({**_drop_empty_but_pools(_ordered(data)),
                                                      FALLBACK_KEY: ladder})
        return written
    defaults = data.pop("defaults", None)
    defaults = dict(defaults) if isinstance(defaults, Mapping) else {}
    for role in TRAINING_POOLS:
        if isinstance(data.get(role), Mapping):
            data[role] = merge_defaults(defaults, data[role])
    common = _common_fields([data[r] for r in TRAINING_POOLS if isinstance(data.get(r), Mapping)])
    data["defaults"] = common
    for role in TRAINING_POOLS:
        if isinstance(data.get(role), Mapping):
            data[role] = {k: v for k, v in data[role].items() if k not in common}
    chief = data.get("chief")
    if isinstance(chief, dict) and chief.get("replicas") == 1:
        del chief["replicas"]  # the default; Vertex requires exactly 1 primary replica
    cleaned: JsonObject = _escape_references(_drop_empty_but_pools(_ordered(data)))
    return cleaned


def _drop_empty_but_pools(data: JsonObject) -> JsonObject:
    """``data`` without empty values, except a pool written as ``{}`` (``chief: {}``): that is
    a pool of its own, one replica taking everything from ``defaults``, and without the key
    there is no pool at all."""
    cleaned: JsonObject = _drop_empty(data)  # a mapping stays a mapping
    kept = [k for k, v in data.items() if k in POOLS and isinstance(v, Mapping) and k not in cleaned]
    return _ordered({**cleaned, **{k: {} for k in kept}}) if kept else cleaned


def _escape_references(value: Any) -> Any:
    """Every string value with ``${`` written ``$${``, the loader's literal ``${``.

    The loader substitutes ``${NAME}`` in string values (never keys) as it reads, so a
    ``${`` in the loaded data is literal text (a ``$${`` in the file, or a variable's value):
    written as is, the next load would fill in a local variable instead. ``$${`` then
    reads back as exactly the text it was (tests/test_convert.py)."""
    if isinstance(value, Mapping):
        return {k: _escape_references(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escape_references(v) for v in value]
    if isinstance(value, str):
        return value.replace("${", "$${")
    return value


def _ordered(data: JsonObject) -> JsonObject:
    """``data`` with its keys in NATIVE_ORDER, others after them."""
    ordered = {k: data[k] for k in NATIVE_ORDER if k in data}
    ordered.update({k: v for k, v in data.items() if k not in ordered})
    return ordered


def _common_fields(pools: list[Mapping[str, Any]]) -> JsonObject:
    """Fields equal (and non-empty) in every pool, when moving them saves lines."""
    if len(pools) < 2:
        return {}
    common = {k: pools[0][k] for k in FACTORED_FIELDS
              if k in pools[0] and not _empty(pools[0][k]) and all(p.get(k) == pools[0][k] for p in pools)}
    # Each factored field saves (pools - 1) copies; the `defaults:` line costs one.
    return common if (len(pools) - 1) * len(common) >= 2 else {}


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _drop_empty(value: Any) -> Any:
    """Remove None / "" / [] / {} mapping values, recursively (list items keep their slots)."""
    if isinstance(value, Mapping):
        out = {k: _drop_empty(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if not _empty(v)}
    if isinstance(value, list):
        items = [_drop_empty(v) for v in value]
        return [] if all(_empty(v) for v in items) else items
    return value

