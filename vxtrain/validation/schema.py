"""JSON Schema (Draft 2020-12) check of the native format.

The schema ships as ``schema.json`` beside this module and is what ``vxtrain
schema`` prints. jsonschema's errors are rewritten into diagnostics a person
can act on: unknown keys get a did-you-mean, type errors say what would be
accepted, and everything is located at FILE:LINE:COL of the key.
"""
from __future__ import annotations

import difflib
import json
import os
from functools import cache
from collections.abc import Callable
from typing import Any

from vxtrain.diagnostics import Diagnostic, error, plural
from vxtrain.formats.wording import wording
from vxtrain.loading.document import KeyPath, NativeSpec

_REQUIRED_HINTS = {
    "display_name": "add `display_name: my-job` (at most 128 characters) or pass --display-name",
}
_TYPE_WORDS = {"string": "a string", "integer": "an integer", "number": "a number",
               "boolean": "true or false", "object": "a mapping", "array": "a list", "null": "null"}


@cache
def schema() -> dict[str, Any]:
    """The native-format JSON Schema shipped with the package."""
    # This module's loader, as pkgutil.get_data would use it: the same file (zip installs too),
    # without importlib.resources (~3 ms) or pkgutil (~0.5 ms) at start-up.
    loader = __spec__.loader if __spec__ is not None else None
    if loader is None or not hasattr(loader, "get_data"):
        raise FileNotFoundError("vxtrain/validation/schema.json is missing from the installed package")
    return json.loads(loader.get_data(os.path.join(os.path.dirname(__file__), "schema.json")))  # type: ignore[no-any-return]


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator  # lazy: +42 ms after validate; only invalid specs need it

    return Draft202012Validator(schema())


@cache
def _fast_check() -> Callable[[Any], bool]:
    """fastjsonschema's compiled form of the same schema, as a predicate: ~20x faster on valid specs.

    It stops at the first error, so it only answers "valid?"; jsonschema (the
    validator of record) produces the full list of errors. The schema uses
    only keywords whose meaning is the same in draft 7, which fastjsonschema
    implements; tests/validation/test_schema.py checks that both always agree.
    """
    # lazy: fastjsonschema and the compiled validator cost +4 ms that `import vxtrain`, `vxtrain --help`,
    # completion and `vxtrain schema` (all of which import this module) never need
    from vxtrain.validation.compiled import compile_predicate

    # A copy: schema() is shared and cached; keep it out of reach of the compiler.
    draft7 = json.loads(json.dumps(schema()))
    draft7["$schema"] = "http://json-schema.org/draft-07/schema#"
    return compile_predicate(draft7)  # cached in the user's cache folder (compiled.py)


def is_valid(data: Any) -> bool:
    """True when ``data`` conforms to the native schema (fast path)."""
    return _fast_check()(data)


def check(native: NativeSpec) -> list[Diagnostic]:
    """Schema diagnostics of a native-shaped spec (empty when it conforms)."""
    if is_valid(native.data):
        return []
    errors = list(_validator().iter_errors(native.data))
    # A null (or a number) where an enum is expected fails both "type" and "enum":
    # report it once, with the enum's list of accepted values.
    enum_paths = {tuple(e.absolute_path) for e in errors if e.validator == "enum"}
    out: list[Diagnostic] = []
    for err in errors:
        if err.validator == "type" and tuple(err.absolute_path) in enum_paths:
            continue
        out += _convert(err, native)
    return out


def _describe(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _expected(subschema: dict[str, Any]) -> str:
    if "x-accepts" in subschema:  # our annotation: how a person says what fits
        return str(subschema["x-accepts"])
    if "enum" in subschema:
        return "one of " + ", ".join(map(str, subschema["enum"]))
    if "const" in subschema:
        return repr(subschema["const"])
    kinds = subschema.get("type")
    if isinstance(kinds, list):
        return " or ".join(_TYPE_WORDS.get(str(k), str(k)) for k in kinds)
    if isinstance(kinds, str):
        return _TYPE_WORDS.get(kinds, kinds)
    if "oneOf" in subschema:
        return " or ".join(_expected(s) for s in subschema["oneOf"])
    return "a value matching the schema"


def _convert(err: Any, native: NativeSpec) -> list[Diagnostic]:
    path: KeyPath = tuple(err.absolute_path)
    kind = err.validator
    if kind == "additionalProperties":
        return _unknown_keys(err, path, native)
    if kind == "required":
        return [_missing_key(err, path, native)]
    if kind == "enum":
        return [_bad_enum(err, path, native)]
    if kind in ("type", "oneOf", "anyOf", "const") or "x-accepts" in err.schema:
        what = _expected(err.schema)
        msg = f"expected {what}, got {_describe(err.instance)}"
        return [error("wrong-type", msg, **native.where(path))]
    limit = _LIMITS.get(kind)
    msg = limit(err.instance, err.validator_value) if limit else f"{_describe(err.instance)}: {err.message}"
    if kind == "maximum" and "x-bound" in err.schema:  # our annotation: where the bound comes from
        msg += f" ({err.schema['x-bound']})"
    return [error(f"schema-{kind}".lower(), msg, **native.where(path))]


#: Messages for bounds: the value and what is accepted (jsonschema's own, e.g.
#: "'aaa…' is too long", would repeat the whole value and not name the limit).
_LIMITS: dict[str, Callable[[Any, Any], str]] = {
    "minimum": lambda v, lim: f"{_describe(v)} is below the minimum of {lim}; give {lim} or more",
    "maximum": lambda v, lim: f"{_describe(v)} is above the maximum of {lim}; give at most {lim}",
    "minLength": lambda v, lim: f"{_describe(v)} is too short; give at least {plural(lim, 'character')}",
    "maxLength": lambda v, lim: (f"{_describe(v)} has {len(v)} characters; at most {lim} are accepted"),
    "minItems": lambda v, lim: f"{_describe(v)} has too few items; give at least {plural(lim, 'item')}",
    "minProperties": lambda v, lim: f"{_describe(v)} has too few keys; give at least {plural(lim, 'key')}",
}


def _missing_key(err: Any, path: KeyPath, native: NativeSpec) -> Diagnostic:
    missing = err.message.split("'")[1] if "'" in err.message else err.message
    # A key a line deleted (a fallback entry's ``key: null``) is located at that line, not
    # at the mapping it is missing from (1:1 for a top-level key).
    deleted = path + (missing,)
    at = deleted if deleted in native.origin else path
    where = native.where(at)
    if native.format == "native" and not where["path"].startswith("extra."):
        hint = _REQUIRED_HINTS.get(missing, "add it (`vxtrain schema` lists every key)")
    else:
        # The key is absent, so the origin map cannot say how the user would spell it: the format
        # can (a value ``extra:`` set is in the API's words: a pythonPackageSpec lacks pythonModule).
        missing = wording("gcloud" if native.format == "native" else native.format).key_name(missing)
        hint = "add it"
    return error("missing-key", f"missing required key '{missing}': {hint}", **where)


def _unknown_keys(err: Any, path: KeyPath, native: NativeSpec) -> list[Diagnostic]:
    allowed = sorted(err.schema.get("properties", {}))
    out = []
    for key in err.instance:
        if key in allowed:
            continue
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        hint = f"did you mean '{close[0]}'?" if close else "accepted keys: " + ", ".join(allowed)
        out.append(error("unknown-key", f"unknown key '{key}'; {hint}", **native.where(path + (key,))))
    return out


def meant(diagnostic: Diagnostic) -> str | None:
    """The key an ``unknown-key`` diagnostic guesses was meant (its did-you-mean), else None."""
    if diagnostic.code != "unknown-key":
        return None
    _, said, guess = diagnostic.message.rpartition("; did you mean '")
    return guess[:-2] if said and guess.endswith("'?") else None


def missing(diagnostic: Diagnostic) -> str | None:
    """The key a ``missing-key`` diagnostic says is missing, else None."""
    if diagnostic.code != "missing-key":
        return None
    _, said, rest = diagnostic.message.partition("missing required key '")
    return rest.partition("'")[0] if said else None


def _bad_enum(err: Any, path: KeyPath, native: NativeSpec) -> Diagnostic:
    choices = [str(c) for c in err.validator_value]
    by_case = {c.casefold(): c for c in choices}  # `strategy: spot` is SPOT in the wrong case
    close = ([by_case[str(err.instance).casefold()]] if str(err.instance).casefold() in by_case
             else difflib.get_close_matches(str(err.instance), choices, n=1, cutoff=0.5))
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    msg = f"{_describe(err.instance)} is not accepted{hint}; expected one of {', '.join(choices)}"
    return error("bad-value", msg, **native.where(path))
