"""``extra:`` checked field by field and value by value, like every other rule.

``extra`` holds raw CustomJob fields in their proto JSON form; ``submit``
hands the merged job to ``google.protobuf.json_format.ParseDict``, which
refuses an unknown field or a value of the wrong type. This rule finds those
problems first, each at its line, against the *installed* aiplatform_v1
messages read as text by :mod:`vxtrain.protos` (never imported: ``validate``
stays fast). The value rules are the proto3 JSON mapping's
(https://protobuf.dev/programming-guides/json/): int64 as a number or a decimal
string, bools unquoted, enums by name, a Duration as ``"3600s"``, a Timestamp
as RFC 3339, a repeated field as a list, a map as a mapping.

Every value accepted here parses with ParseDict (tests/validation/test_extra.py
checks it with hypothesis). Deliberately stricter than ParseDict:

- snake_case field names (``job_spec``) are refused with the camelCase name. The merge works on JSON names, so a snake_case key beside
  the camelCase one vxtrain compiles would set the field twice.
- ``null`` (``extra-null``): ParseDict clears the field; in a spec it is almost
  always a key whose value was forgotten.
- enums by name only (ParseDict also reads 3, "3", 1.5 and true as enum
  numbers), integers written as floats (``2.0``) or as
  strings other than decimal digits (``"+5"``, ``" 5"``), negative or
  non-canonical Durations (``"-5s"``, ``"1e3s"``).
- a message written as something other than a mapping (ParseDict takes ``""``
  and ``[]`` as an empty message).
- ``google.protobuf.Any`` values (only under the output-only ``error.details``).
"""
from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from vxtrain import protos
from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.loading.document import Key, KeyPath, NativeSpec
from vxtrain.model import DURATION_MAX_SECONDS, Job
from vxtrain.protos import MessageRef, ProtoField

#: The message ``extra`` is a part of.
CUSTOM_JOB: MessageRef = ("custom_job", "CustomJob")
JSON_DOC = "https://protobuf.dev/programming-guides/json/"

_INT_RANGES: dict[str, tuple[int, int]] = {
    **dict.fromkeys(("INT32", "SINT32", "SFIXED32"), (-2**31, 2**31 - 1)),
    **dict.fromkeys(("UINT32", "FIXED32"), (0, 2**32 - 1)),
    **dict.fromkeys(("INT64", "SINT64", "SFIXED64"), (-2**63, 2**63 - 1)),
    **dict.fromkeys(("UINT64", "FIXED64"), (0, 2**64 - 1)),
}
_FLOAT32_MAX = 3.4028234663852886e38
#: The value patterns, compiled on first use (re's own cache): compiling them at import cost
#: ~1 ms of every cold start, and only specs with ``extra:`` reach them.
_DECIMAL = r"-?[0-9]+"
_FLOAT_TEXT = r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"
_FLOAT_WORDS = ("NaN", "Infinity", "-Infinity")
_BASE64 = r"[A-Za-z0-9+/_-]*=*"
_SURROGATE = "[\ud800-\udfff]"
#: google.protobuf.Duration JSON: seconds with up to 9 fractional digits and an "s".
_DURATION = r"([0-9]+)(\.[0-9]{1,9})?s"
#: google.protobuf.Timestamp JSON (RFC 3339 with a "T" and an explicit offset).
_TIMESTAMP = (r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(\.[0-9]{1,9})?"
              r"(Z|[+-][0-9]{2}:[0-9]{2})")
_TIMESTAMP_RANGE = (-62_135_596_800, 253_402_300_799)  # 0001-01-01 … 9999-12-31, UTC
#: google.rpc.Status (CustomJob.error, output only): its fields, as protos would read them.
_STATUS: dict[str, ProtoField] = {
    "code": ProtoField("code", "code", "single", "INT32"),
    "message": ProtoField("message", "message", "single", "STRING"),
    "details": ProtoField("details", "details", "repeated", "MESSAGE", ref="any_pb2.Any"),
}


def check(job: Job, native: NativeSpec) -> list[Diagnostic]:
    """Every problem of ``extra:``: unknown fields (with a did-you-mean), values of the wrong
    type or form, unknown enum names, and a worker pool given two kinds of code."""
    if not job.extra:
        return []
    if not protos.installed():
        return [warning("extra-unchecked", "`extra` was not checked: google-cloud-aiplatform is not "
                        "installed (pip install google-cloud-aiplatform)", **native.where(("extra",)))]
    out = list(_message(job.extra, CUSTOM_JOB, (), native))
    out += _task_conflicts(job, native)
    return out


# --- messages, lists, maps ------------------------------------------------------------

def _message(value: Mapping[str, Any], ref: MessageRef, path: KeyPath,
             native: NativeSpec) -> Iterator[Diagnostic]:
    fields = protos.message_fields(*ref)
    if fields is None:
        return
    yield from _fields(value, fields, f"{protos.PROTO_PACKAGE}.{ref[1]}", path, native)


def _fields(value: Mapping[str, Any], fields: Mapping[str, ProtoField], message: str, path: KeyPath,
            native: NativeSpec) -> Iterator[Diagnostic]:
    oneofs: dict[str, str] = {}
    for key, sub in value.items():
        field = fields.get(str(key))
        here = path + (str(key),)
        if field is None:
            yield _unknown_field(str(key), message, fields, here, native)
            continue
        if field.oneof is not None and sub is not None:
            if field.oneof in oneofs:
                yield _diag("extra-oneof", f"`{oneofs[field.oneof]}` and `{key}` are alternatives (oneof "
                            f"{field.oneof} of {message}): give one", here, native)
            oneofs.setdefault(field.oneof, str(key))
        short = message.rpartition(".")[2] if message.startswith(protos.PROTO_PACKAGE) else message
        yield from _field(field, sub, f"`{key}` ({short}.{field.name})", here, native)


def _field(field: ProtoField, value: Any, name: str, path: KeyPath,
           native: NativeSpec) -> Iterator[Diagnostic]:
    if value is None:
        yield _diag("extra-null", f"`{path[-1]}` is null: give a value or leave the key out "
                    "(vxtrain refuses null in extra; the API would silently clear the field)", path, native)
    elif field.kind == "repeated":
        if not isinstance(value, list):
            yield _type(name, f"a list ({_what(field)} items)", value, path, native)
            return
        for i, item in enumerate(value):
            if item is None:
                yield _diag("extra-type", f"item {i} of `{path[-1]}` is null; a list item needs a value",
                            path + (i,), native)
            else:
                yield from _single(field, item, name, path + (i,), native)
    elif field.kind == "map":
        yield from _map(field, value, name, path, native)
    else:
        yield from _single(field, value, name, path, native)


def _map(field: ProtoField, value: Any, name: str, path: KeyPath,
         native: NativeSpec) -> Iterator[Diagnostic]:
    if not isinstance(value, Mapping):
        yield _type(name, f"a mapping of {_what(field)} values", value, path, native)
        return
    for key, item in value.items():
        problem = _map_key_problem(field.key_type, key)
        if problem:
            yield _diag("extra-type", f"map key {key!r} of {name} {problem}", path + (str(key),), native)
        elif item is None:
            yield _diag("extra-type", f"`{key}` of {name} is null; a map value needs a value",
                        path + (str(key),), native)
        else:
            yield from _single(field, item, name, path + (key,), native)


def _map_key_problem(key_type: str | None, key: Any) -> str | None:
    """JSON map keys are strings; integer and bool keys are written as their text."""
    if not isinstance(key, str):
        return "must be a string (quote it)"
    if key_type in _INT_RANGES and not _in_range(key_type, key):
        return "must be an integer written as decimal digits"
    if key_type == "BOOL" and key not in ("true", "false"):
        return 'must be "true" or "false"'
    return None


# --- one value ---------------------------------------------------------------------------

def _single(field: ProtoField, value: Any, name: str, path: KeyPath,
            native: NativeSpec) -> Iterator[Diagnostic]:
    if field.message is not None:
        if isinstance(value, Mapping):
            yield from _message(value, field.message, path, native)
        else:
            yield _shape(f"{protos.PROTO_PACKAGE}.{field.message[1]}", value, name, path, native)
    elif field.enum is not None:
        yield from _enum(field.enum, value, name, path, native)
    elif field.type == "MESSAGE":
        yield from _well_known(field.ref or "", value, name, path, native)
    else:
        problem = _scalar_problem(field.type, value)
        if problem is not None:
            yield _type(name, problem, value, path, native)


def _scalar_problem(ptype: str | None, value: Any) -> str | None:
    """What a proto scalar of type ``ptype`` must be, when ``value`` is not that (else None)."""
    if ptype == "BOOL":
        return None if isinstance(value, bool) else "true or false (a bool, unquoted)"
    if ptype == "STRING":
        if not isinstance(value, str):
            return "a string (quote it)"
        return "a string without unpaired surrogates" if re.search(_SURROGATE, value) else None
    if ptype in _INT_RANGES:
        if _in_range(ptype, value):
            return None
        low, high = _INT_RANGES[ptype]
        within = f" from {low} to {high}" if isinstance(value, int) and not isinstance(value, bool) else ""
        return f"an integer{within} ({ptype.lower()}: a number, or a string of decimal digits)"
    if ptype in ("DOUBLE", "FLOAT"):
        return None if _float_ok(ptype, value) else 'a number (or "NaN", "Infinity", "-Infinity")'
    if ptype == "BYTES":
        return None if isinstance(value, str) and re.fullmatch(_BASE64, value) else "base64 text"
    return None  # a type protos could not read: not checked, as before


def _in_range(ptype: str, value: Any) -> bool:
    if isinstance(value, str) and re.fullmatch(_DECIMAL, value):
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    low, high = _INT_RANGES[ptype]
    return low <= value <= high


def _float_ok(ptype: str, value: Any) -> bool:
    if isinstance(value, str):
        if value in _FLOAT_WORDS:
            return True
        if not re.fullmatch(_FLOAT_TEXT, value):
            return False
        value = float(value)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    if not math.isfinite(value):
        return False  # JSON has no Infinity: ParseDict wants the quoted words
    return ptype == "DOUBLE" or abs(value) <= _FLOAT32_MAX


def _enum(ref: protos.TypeRef, value: Any, name: str, path: KeyPath,
          native: NativeSpec) -> Iterator[Diagnostic]:
    values = protos.enum_values(*ref)
    if values is None or (isinstance(value, str) and value in values):
        return
    full = f"{protos.PROTO_PACKAGE}.{ref[1]}"
    names = [v for v in values if not v.endswith("_UNSPECIFIED")] or list(values)
    accepted = "accepted: " + ", ".join(names)
    if isinstance(value, int) and not isinstance(value, bool):
        yield _diag("extra-enum", f"{name} is {value}: write the {full} by name ({accepted})", path, native)
        return
    close = difflib.get_close_matches(str(value).upper(), list(values), n=1, cutoff=0.6)
    hint = f'did you mean "{close[0]}"? ' if close else ""
    yield _diag("extra-enum", f"{name}: {value!r} is not a {full}; {hint}{accepted}", path, native)


def _well_known(ref: str, value: Any, name: str, path: KeyPath,
                native: NativeSpec) -> Iterator[Diagnostic]:
    """Messages outside aiplatform_v1 that CustomJob uses, in their special JSON forms."""
    kind = ref.rpartition(".")[2]
    if kind == "Duration":
        yield from _duration(value, name, path, native)
    elif kind == "Timestamp":
        if not _timestamp_ok(value):
            yield _type(name, 'an RFC 3339 time in quotes, e.g. "2025-01-31T12:00:00Z"', value, path, native)
    elif kind == "Status":
        if isinstance(value, Mapping):
            yield from _fields(value, _STATUS, "google.rpc.Status", path, native)
        else:
            yield _shape("google.rpc.Status", value, name, path, native)
    elif kind == "Any":
        yield _diag("extra-type", f"{name} is a google.protobuf.Any, which vxtrain cannot check: leave "
                    "it out", path, native)
    else:
        yield warning("extra-unchecked", f"{name} ({ref}) is not checked by vxtrain; the API checks it "
                      "at submit", **native.where(("extra",) + path))


def _duration(value: Any, name: str, path: KeyPath, native: NativeSpec) -> Iterator[Diagnostic]:
    match = re.fullmatch(_DURATION, value) if isinstance(value, str) else None
    if match is not None and int(match.group(1)) <= DURATION_MAX_SECONDS:
        return
    text = ("a Duration: seconds with an `s` suffix in quotes, e.g. \"3600s\" or \"1.5s\" (extra is not "
            "converted: write 7 days as \"604800s\")")
    yield _diag("extra-type", f"{name} must be {text}, got {value!r}", path, native)


def _timestamp_ok(value: Any) -> bool:
    match = re.fullmatch(_TIMESTAMP, value) if isinstance(value, str) else None
    if match is None:
        return False
    try:
        moment = datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return False
    seconds = int((moment - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds())
    offset = match.group(3)
    if offset != "Z":
        shift = (int(offset[1:3]) * 60 + int(offset[4:6])) * 60
        seconds += -shift if offset[0] == "+" else shift
    return _TIMESTAMP_RANGE[0] <= seconds <= _TIMESTAMP_RANGE[1]


# --- a pool's code: containerSpec or pythonPackageSpec -----------------------------------

def _task_conflicts(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """``extra`` giving a pool the other kind of code than the one vxtrain compiles for it
    (WorkerPoolSpec's oneof ``task``): the merged pool would have both, which the API refuses."""
    spec = job.extra.get("jobSpec")
    pools = spec.get("workerPoolSpecs") if isinstance(spec, Mapping) else None
    fields = protos.message_fields("custom_job", "WorkerPoolSpec") or {}
    if not isinstance(pools, list):
        return
    by_index = {pool.index: pool for pool in job.ordered_pools()}
    for index, raw in enumerate(pools):
        pool = by_index.get(index)
        if pool is None or not isinstance(raw, Mapping):
            continue
        # The compiler's choice (compiler.compile_pool): a package only without an image; no task
        # for a pool without code (then the one task extra gives is its own; two are _fields' oneof).
        if pool.python_package is not None and pool.image is None:
            compiled = "pythonPackageSpec"
        elif pool.image or pool.build or pool.command or pool.args or pool.env or pool.role == "reduction_server":
            compiled = "containerSpec"
        else:
            continue
        for key in raw:
            field = fields.get(str(key))
            if field is not None and field.oneof is not None and key != compiled and raw[key] is not None:
                yield _diag("extra-oneof", f"`{key}` in extra: the {pool.role} pool (workerPoolSpecs[{index}]) "
                            f"already compiles to a {compiled}, and a WorkerPoolSpec takes one of "
                            f"containerSpec or pythonPackageSpec; set the code in `{pool.role}:` instead",
                            ("jobSpec", "workerPoolSpecs", index, str(key)), native)


# --- diagnostics ---------------------------------------------------------------------------

def _what(field: ProtoField) -> str:
    if field.message is not None:
        return f"{protos.PROTO_PACKAGE}.{field.message[1]}"
    if field.enum is not None:
        return f"{protos.PROTO_PACKAGE}.{field.enum[1]}"
    return (field.ref or field.type or "?").rpartition(".")[2].lower()


def _unknown_field(key: str, message: str, fields: Mapping[str, ProtoField], path: KeyPath,
                   native: NativeSpec) -> Diagnostic:
    names = sorted(fields)
    guess = _guess(key, names)
    hint = f"did you mean `{guess}`?" if guess else "fields: " + ", ".join(names)
    return _diag("extra-unknown-field", f"`{key}` is not a field of {message} in the installed "
                 f"google-cloud-aiplatform (extra takes the camelCase JSON names); {hint}", path, native)


def _guess(key: str, names: Sequence[str]) -> str | None:
    camel = protos.snake_to_camel(key)
    for name in names:
        if name.lower() == camel.lower():
            return name
    close = difflib.get_close_matches(camel, names, n=1, cutoff=0.6)
    return close[0] if close else None


def _shape(message: str, value: Any, name: str, path: KeyPath, native: NativeSpec) -> Diagnostic:
    return _diag("extra-type", f"{name} must be a mapping ({message}), got {value!r}", path, native)


def _type(name: str, expected: str, value: Any, path: KeyPath, native: NativeSpec) -> Diagnostic:
    return _diag("extra-type", f"{name} must be {expected}, got {value!r} ({JSON_DOC})", path, native)


def _diag(code: str, message: str, path: Sequence[Key], native: NativeSpec) -> Diagnostic:
    return error(code, message, **native.where(("extra",) + tuple(path)))
