"""The installed google-cloud-aiplatform protos, read as source text.

Vertex AI's message and enum definitions live in the installed
``google.cloud.aiplatform_v1/types/*.py`` (proto-plus classes). vxtrain reads
them *as text* with ``ast`` — never importing them, so ``validate`` and
``plan`` stay fast (importing google.cloud.aiplatform takes seconds) — and a
field or accelerator added by a newer library is known without a vxtrain
release. Each module is parsed once, on first use.

This is the one reader: the gcloud format (accepted field names), the
validation of ``extra:`` (field names and values) and the catalog (the AcceleratorType enum) all
ask it. Each caller keeps its own fallback for when the package is not
installed (``installed()`` is False, every lookup returns None).
"""
from __future__ import annotations

import ast
import functools
import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: The Python package whose ``types/`` folder holds the proto-plus sources.
TYPES_PACKAGE = "google.cloud.aiplatform_v1"
#: The proto package those messages belong to (for messages to users).
PROTO_PACKAGE = "google.cloud.aiplatform.v1"

#: A message or enum of aiplatform_v1: (module file stem under types/, qualified class name),
#: e.g. ``("custom_job", "Scheduling.Strategy")``.
TypeRef = tuple[str, str]
MessageRef = TypeRef

#: proto-plus field constructors → cardinality.
_FIELD_CALLS = {"Field": "single", "RepeatedField": "repeated", "MapField": "map"}


@dataclass(frozen=True)
class ProtoField:
    """One field of a proto message as declared in aiplatform_v1/types/*.py."""

    name: str  # as declared (snake_case)
    json_name: str  # its proto JSON name (camelCase), what REST and gcloud configs use
    kind: str  # "single" | "repeated" | "map"
    type: str | None = None  # proto type of the value: STRING, INT64, BOOL, MESSAGE, ENUM, ...
    message: MessageRef | None = None  # an aiplatform_v1 message we can look into, else None
    enum: TypeRef | None = None  # an aiplatform_v1 enum we can look into, else None
    ref: str | None = None  # the message= / enum= reference as written (``duration_pb2.Duration``)
    key_type: str | None = None  # a map's key type (STRING, INT64, ...); None for other kinds
    oneof: str | None = None  # the oneof group the field belongs to (``task``), else None

    @property
    def repeated(self) -> bool:
        """A list in JSON (``RepeatedField``)."""
        return self.kind == "repeated"


@dataclass(frozen=True)
class ProtoModule:
    """The messages and enums of one types/*.py module, by qualified class name."""

    messages: dict[str, dict[str, ProtoField]] = field(default_factory=dict)  # JSON name → field
    enums: dict[str, dict[str, int]] = field(default_factory=dict)  # value name → number


def snake_to_camel(name: str) -> str:
    """``base_output_directory`` → ``baseOutputDirectory`` (the proto JSON name)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@functools.lru_cache(maxsize=1)
def types_dir() -> Path | None:
    """aiplatform_v1/types of the installed package, found without importing it (None: not installed)."""
    try:
        spec = importlib.util.find_spec(TYPES_PACKAGE)
    except (ImportError, ValueError):
        return None
    for location in list(spec.submodule_search_locations or []) if spec else []:
        if (Path(location) / "types").is_dir():
            return Path(location) / "types"
    return None


def installed() -> bool:
    """Whether google-cloud-aiplatform's proto sources can be read."""
    return types_dir() is not None


def message_fields(module: str, qualname: str) -> dict[str, ProtoField] | None:
    """JSON name → field of message ``qualname`` in types/``module``.py (None if unknown)."""
    return read_module(module).messages.get(qualname)


def enum_values(module: str, qualname: str) -> dict[str, int] | None:
    """Value name → number of enum ``qualname`` in types/``module``.py, in declaration order
    (``*_UNSPECIFIED`` included; None if unknown)."""
    return read_module(module).enums.get(qualname)


@functools.lru_cache(maxsize=None)
def read_module(module: str) -> ProtoModule:
    """Every message and enum of the installed types/``module``.py (empty when not there)."""
    folder = types_dir()
    source = folder / f"{module}.py" if folder else None
    if source is None or not source.is_file():
        return ProtoModule()
    return parse(source.read_text(encoding="utf-8"), module)


def parse(text: str, module: str) -> ProtoModule:
    """The proto-plus messages and enums (nested ones too) of one module's source ``text``."""
    tree = ast.parse(text)
    imports = _type_imports(tree)
    classes = dict(_classes(tree.body, ()))
    messages = {name: _fields(node, name, module, imports, classes)
                for name, node in classes.items() if _base_is(node, "Message")}
    enums = {name: _enum(node) for name, node in classes.items() if _base_is(node, "Enum")}
    return ProtoModule(messages, enums)


def _type_imports(tree: ast.Module) -> dict[str, str]:
    """Local alias → module stem for ``from google.cloud.aiplatform_v1.types import x as y``."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == f"{TYPES_PACKAGE}.types":
            out.update({a.asname or a.name: a.name for a in node.names})
    return out


def _classes(body: Sequence[ast.stmt], scope: tuple[str, ...]) -> list[tuple[str, ast.ClassDef]]:
    """(qualified name, class) of every proto.Message / proto.Enum, nested ones included."""
    out: list[tuple[str, ast.ClassDef]] = []
    for node in body:
        if isinstance(node, ast.ClassDef) and (_base_is(node, "Message") or _base_is(node, "Enum")):
            qual = scope + (node.name,)
            out.append((".".join(qual), node))
            out += _classes(node.body, qual)
    return out


def _base_is(node: ast.ClassDef, kind: str) -> bool:
    return any(isinstance(b, ast.Attribute) and b.attr == kind for b in node.bases)


def _enum(node: ast.ClassDef) -> dict[str, int]:
    """``NAME = 3`` lines of a proto.Enum class."""
    out: dict[str, int] = {}
    for stmt in node.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, int)):
            out[stmt.targets[0].id] = stmt.value.value
    return out


def _fields(node: ast.ClassDef, qualname: str, module: str, imports: Mapping[str, str],
            classes: Mapping[str, ast.ClassDef]) -> dict[str, ProtoField]:
    """Fields declared as ``name: type = proto.Field(...)`` (or RepeatedField / MapField)."""
    out: dict[str, ProtoField] = {}
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        call = stmt.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr in _FIELD_CALLS):
            continue
        kind = _FIELD_CALLS[call.func.attr]
        keywords = {kw.arg: kw.value for kw in call.keywords if kw.arg}
        # MapField(key type, value type, ...): the value's type is the one that matters.
        at = 1 if kind == "map" else 0
        type_arg = call.args[at] if len(call.args) > at else None
        msg, enum = keywords.get("message"), keywords.get("enum")
        ref_node = msg if msg is not None else enum
        target = _resolve(ref_node, qualname, module, imports, classes) if ref_node is not None else None
        name = stmt.target.id
        oneof = keywords.get("oneof")
        out[snake_to_camel(name)] = ProtoField(
            name, snake_to_camel(name), kind, _proto_type(type_arg),
            message=target if msg is not None else None, enum=target if enum is not None else None,
            ref=_dotted(ref_node) if ref_node is not None else None,
            key_type=_proto_type(call.args[0]) if kind == "map" and call.args else None,
            oneof=oneof.value if isinstance(oneof, ast.Constant) and isinstance(oneof.value, str) else None)
    return out


def _proto_type(node: ast.expr | None) -> str | None:
    """``proto.STRING`` → ``STRING``."""
    return node.attr if isinstance(node, ast.Attribute) else None


def _resolve(ref: ast.expr, scope: str, module: str, imports: Mapping[str, str],
             classes: Mapping[str, ast.ClassDef]) -> TypeRef | None:
    """A ``message=`` / ``enum=`` reference → (module, qualname), looked up like Python scoping."""
    dotted = _dotted(ref)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    if head in imports and rest:
        return (imports[head], rest)
    parts = scope.split(".")
    for cut in range(len(parts), -1, -1):
        candidate = ".".join(parts[:cut] + [dotted])
        if candidate in classes:
            return (module, candidate)
    return None


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None
