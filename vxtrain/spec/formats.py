"""Input formats: detect which one a document is written in and normalize it.

Three formats are accepted (DESIGN.md, "Input formats"):

- **native**: vxtrain's role-based YAML, passed through unchanged;
- **gcloud**: the CustomJobSpec file ``gcloud ai custom-jobs create --config``
  takes (or a whole CustomJob), converted by :mod:`vxtrain.spec.gcloud`;
- **legacy**: an AI Platform Training ``trainingInput`` document, converted by
  :mod:`vxtrain.spec.legacy`.

Converters build the native dict through :class:`Conversion`, which also
records, for every native key path it writes, the source key path it came
from (``NativeSpec.origin``): a later rule that complains about
``workers.machine_type`` then points at ``workerPoolSpecs[1].machineSpec.machineType``
with the line and column the user wrote.

This module stays off the heavy import path: nothing here (or in the two
converters) imports google.cloud.aiplatform.
"""
from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.spec.document import Document, Format, KeyPath, NativeSpec, format_path
from vxtrain.spec.model import merge_defaults

#: Top-level keys that only an AI Platform Training document has.
LEGACY_MARKERS: tuple[str, ...] = ("trainingInput", "scaleTier", "masterType", "masterConfig", "workerCount")

#: Pools that take ``defaults`` (the Reduction Server pool never does: DESIGN.md, Compile rules).
TRAINING_POOLS: tuple[str, ...] = ("chief", "workers", "parameter_servers", "evaluators")

#: Pool fields ``native_document`` moves into ``defaults`` when every training pool agrees.
FACTORED_FIELDS: tuple[str, ...] = ("image", "python_package", "command", "args", "env", "disk")

#: Key order of a native document written by ``native_document``.
NATIVE_ORDER: tuple[str, ...] = (
    "display_name", "project", "region", "labels", "service_account", "network", "base_output_dir",
    "tensorboard", "enable_web_access", "scheduling", "defaults", "chief", "workers",
    "parameter_servers", "reduction_server", "evaluators", "local", "study", "extra",
)


def detect(data: Any) -> Format:
    """Which input format ``data`` (a loaded YAML root) is written in."""
    if not isinstance(data, Mapping):
        return "native"
    if any(key in data for key in LEGACY_MARKERS):
        return "legacy"
    job_spec = data.get("jobSpec")
    if "workerPoolSpecs" in data or (isinstance(job_spec, Mapping) and "workerPoolSpecs" in job_spec):
        return "gcloud"
    return "native"


def to_native(document: Document, *, display_name: str | None = None) -> tuple[NativeSpec | None, list[Diagnostic]]:
    """The document in the native shape, plus the diagnostics of the conversion.

    ``display_name`` is used by formats that have none of their own (gcloud's
    ``--display-name``, else the file stem). Native input is returned as is:
    its JSON Schema check happens in the next stage.
    """
    data = document.data
    if not isinstance(data, Mapping):
        msg = f"a spec must be a mapping of keys to values, got {type(data).__name__}"
        return None, [error("not-a-mapping", msg, "", file=document.file, line=1, column=1)]
    fmt = detect(data)
    if fmt == "gcloud":
        from vxtrain.spec import gcloud

        return gcloud.convert(document, display_name=display_name)
    if fmt == "legacy":
        from vxtrain.spec import legacy

        return legacy.convert(document, display_name=display_name)
    return NativeSpec(data=dict(data), format="native", source=document, origin={}), []


# --- building a native dict with its origin map ------------------------------------

def _set_path(root: dict[str, Any], path: KeyPath, value: Any) -> None:
    """Set ``value`` at ``path``, creating dicts (str keys) and lists (int keys) on the way."""
    cur: Any = root
    for key, nxt in zip(path, path[1:]):
        make: type = list if isinstance(nxt, int) else dict
        if isinstance(key, int):
            while len(cur) <= key:
                cur.append(make())
        elif not isinstance(cur.get(key), make):
            cur[key] = make()
        cur = cur[key]
    last = path[-1]
    if isinstance(last, int):
        while len(cur) <= last:
            cur.append({})
    cur[last] = value


def suggest(key: str, allowed: Iterable[str]) -> str | None:
    """The accepted key closest to ``key`` (difflib), if any is close enough."""
    close = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)
    return close[0] if close else None


@dataclass
class Conversion:
    """A native dict under construction, with its origin map and diagnostics."""

    document: Document
    data: dict[str, Any] = field(default_factory=dict)
    origin: dict[KeyPath, KeyPath] = field(default_factory=lambda: {(): ()})
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def link(self, native: KeyPath, source: KeyPath) -> None:
        """Record that native key path ``native`` came from ``source``."""
        self.origin[native] = source

    def put(self, native: KeyPath, value: Any, source: KeyPath, *, items: bool = True) -> None:
        """Write ``value`` at ``native`` and link it to ``source``.

        With ``items``, list items and map keys beneath are linked one to one too.
        """
        _set_path(self.data, native, value)
        self.link(native, source)
        if not items:
            return
        if isinstance(value, list):
            for i in range(len(value)):
                self.link(native + (i,), source + (i,))
        elif isinstance(value, Mapping):
            for k in value:
                self.link(native + (k,), source + (k,))

    def where(self, source: KeyPath) -> dict[str, Any]:
        """Diagnostic location keywords of a source key path."""
        pos = self.document.locate(source)
        return {"path": format_path(source), "file": pos.file if pos else self.document.file,
                "line": pos.line if pos else None, "column": pos.column if pos else None}

    def error(self, code: str, message: str, source: KeyPath) -> None:
        """Add an error located at a source key path."""
        self.diagnostics.append(error(code, message, **self.where(source)))

    def warning(self, code: str, message: str, source: KeyPath) -> None:
        """Add a warning located at a source key path."""
        self.diagnostics.append(warning(code, message, **self.where(source)))

    def check_keys(self, mapping: Mapping[str, Any], allowed: Iterable[str], source: KeyPath,
                   hints: Mapping[str, str] | None = None) -> None:
        """An ``unknown-key`` error (with a did-you-mean) for each key of ``mapping`` not in ``allowed``."""
        accepted = sorted(set(allowed))
        for key in mapping:
            if key in accepted:
                continue
            close = suggest(str(key), accepted)
            hint = (hints or {}).get(str(key)) or (
                f"did you mean '{close}'?" if close else "accepted keys: " + ", ".join(accepted))
            where = format_path(source) or "the document root"
            self.error("unknown-key", f"unknown key '{key}' in {where}; {hint}", source + (key,))

    def mapping(self, value: Any, source: KeyPath, what: str) -> Mapping[str, Any] | None:
        """``value`` when it is a mapping; else a ``wrong-type`` error and None (None stays silent)."""
        if value is None or isinstance(value, Mapping):
            return value
        self.error("wrong-type", f"{what} must be a mapping, got {describe(value)}", source)
        return None

    def result(self, fmt: Format) -> tuple[NativeSpec, list[Diagnostic]]:
        """The finished NativeSpec and the diagnostics of the conversion."""
        return NativeSpec(data=self.data, format=fmt, source=self.document, origin=self.origin), self.diagnostics


def describe(value: Any) -> str:
    """``value`` as short JSON, for messages that name the bad value."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def as_int(value: Any) -> int | None:
    """An int from an int or a decimal string (int64 fields are strings in proto JSON)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def int_or_same(value: Any) -> Any:
    """``as_int(value)`` when it is a whole number, else ``value`` itself (the schema
    check then reports it with the user's own spelling)."""
    number = as_int(value)
    return value if number is None else number


def humanize_seconds(seconds: int) -> str:
    """``86400`` → ``1d``, ``5400`` → ``90m``, ``61`` → ``61s`` (the native duration forms)."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def proto_duration(value: Any) -> str | None:
    """Proto JSON duration (``"86400s"``, ``"1.5s"``) or a number of seconds → native form."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return humanize_seconds(int(value)) if value >= 0 else None
    if not isinstance(value, str) or not value.strip().endswith("s"):
        return None
    try:
        seconds = float(value.strip()[:-1])
    except ValueError:
        return None
    return humanize_seconds(int(seconds)) if seconds >= 0 else None


# --- native document for `vxtrain convert --to native` ------------------------------

def native_document(native: NativeSpec) -> dict[str, Any]:
    """A clean native dict: empty values dropped, shared pool fields moved into ``defaults``."""
    data = copy.deepcopy(native.data)
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
    ordered = {k: data[k] for k in NATIVE_ORDER if k in data}
    ordered.update({k: v for k, v in data.items() if k not in ordered})
    cleaned: dict[str, Any] = _drop_empty(ordered)  # a mapping stays a mapping
    return cleaned


def _common_fields(pools: list[Mapping[str, Any]]) -> dict[str, Any]:
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

