"""Load a spec: safe YAML → plain data + the position of every key.

The document is built *iteratively* from PyYAML's event stream (libyaml's
parser when available), never with the recursive composer/constructor, so the
limits below are enforced while the document is being built, before a hostile
file can cost time or memory:

* ``MAX_FILE_BYTES`` — files are ``stat``-ed (and reads are bounded) before
  anything is parsed: ``too-large``.
* ``MAX_DEPTH`` — nesting of mappings and sequences, aliases included:
  ``too-deep``.
* ``MAX_NODES`` — nodes in the built document *after* alias expansion (a
  "billion laughs" bomb stops here): ``alias-limit`` when aliases contributed,
  else ``too-many-nodes``.
* ``MAX_CHARS`` — characters of all keys and string values *after* alias
  expansion and ``${NAME}`` substitution (a big string repeated through
  aliases or variable references stops here, before it is built):
  ``alias-limit`` or ``variable-limit``.

YAML rules, in short: scalars are typed with PyYAML's SafeLoader resolver
(int, float, bool, null, str; timestamps stay their text); explicit tags other
than ``!!str !!int !!float !!bool !!null !!map !!seq`` are errors; keys are
always the key's source text (``on:``, ``yes:`` and ``1:`` stay strings);
duplicate keys are errors (PyYAML would keep the last silently); exactly one
document whose root is a mapping; YAML merge keys (``<<``) are refused.

After parsing, in order:

1. ``${NAME}`` / ``${NAME:-default}`` in string *values* (never keys) are
   substituted from ``variables`` first, then ``environ``. As in the shell,
   ``:-`` also applies when the variable is set but empty. ``$${`` is a
   literal ``${``; defaults cannot nest references. An unquoted scalar that is
   exactly one reference is re-typed by YAML rules (``replicas: ${N}`` with
   ``N=4`` is the int 4; ``${X:-}`` is null); anything else stays a string.
2. Overlays (``-f``) are loaded the same way and deep-merged over the base in
   order: mappings merge key by key, lists and scalars replace, and an
   overlay value of ``null`` deletes the key. Merged-in positions point at the
   overlay file.
3. ``--set dotted.key[N]=value`` assignments, values typed by YAML rules
   (``x=`` is the empty string; no ``${}`` substitution — the shell already
   had its chance). Missing intermediate mappings are created; an index may
   replace an item or append one at the end of a list.
"""
from __future__ import annotations

import gc
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from yaml import events as ev
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode

from vxtrain.diagnostics import Diagnostic, error
from vxtrain.loading.document import Document, KeyPath, Position, format_path

__all__ = ["MAX_CHARS", "MAX_DEPTH", "MAX_ERRORS", "MAX_FILE_BYTES", "MAX_NODES", "SetAssignment", "load",
           "load_text", "parse_set", "substitute"]

#: Largest spec file accepted (bytes). Real specs are a few KiB.
MAX_FILE_BYTES = 4 * 1024 * 1024
#: Deepest nesting of mappings/sequences (the root mapping is depth 1).
MAX_DEPTH = 64
#: Most nodes (keys, scalars, collections) in one document after alias expansion.
MAX_NODES = 100_000
#: Most characters of keys and string values in one document after alias expansion
#: and ${NAME} substitution (a file within MAX_FILE_BYTES holds at most that many).
MAX_CHARS = MAX_FILE_BYTES
#: Most problems reported for one file before the loader stops reading it.
MAX_ERRORS = 100

# CSafeLoader is libyaml's parser plus the safe constructor; only its parser
# (get_event) is used. The pure-Python SafeLoader is the fallback.
_Loader: Any = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
_RESOLVERS = yaml.SafeLoader.yaml_implicit_resolvers
_CONSTRUCTOR = SafeConstructor()
_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_TAG + name for name in ("str", "int", "float", "bool", "null")}
_TYPED_TAGS = {_TAG + name for name in ("int", "float", "bool", "null")}
_COLLECTION_TAGS = {ev.MappingStartEvent: _TAG + "map", ev.SequenceStartEvent: _TAG + "seq"}
_PLAIN_CACHE: dict[str, Any] = {}
_PLAIN_CACHE_MAX = 8192
_NEW = object.__new__
_MISSING: Any = object()


def _pos(file: str, line: int, column: int) -> Position:
    """A Position without the frozen-dataclass __init__ (3x faster: hot path)."""
    p = _NEW(Position)
    d = p.__dict__
    d["file"] = file
    d["line"] = line
    d["column"] = column
    return p


# ---------------------------------------------------------------- scalars


def _construct(tag: str, text: str) -> Any:
    """PyYAML's SafeConstructor for one standard scalar tag (raises on bad text)."""
    if tag == _TAG + "str":
        return text
    method = _CONSTRUCTOR.yaml_constructors[tag]
    return method(_CONSTRUCTOR, ScalarNode(tag, text))


def _resolve(text: str) -> Any:
    """Type a plain scalar by SafeLoader's implicit resolvers (timestamps stay text)."""
    for tag, regexp in _RESOLVERS.get(text[:1], ()):
        if regexp.match(text):
            if tag not in _TYPED_TAGS:
                return text
            try:
                return _construct(tag, text)
            except ValueError:  # e.g. an int longer than Python's digit limit
                return text
    return text


def _plain(text: str) -> Any:
    """``_resolve`` with a bounded cache: specs repeat the same plain values."""
    try:
        return _PLAIN_CACHE[text]
    except KeyError:
        value = _resolve(text)
        if len(_PLAIN_CACHE) < _PLAIN_CACHE_MAX:
            _PLAIN_CACHE[text] = value
        return value


# ------------------------------------------------------------ ${VARIABLES}

_REF = re.compile(r"\$(?:\$\{|\{(?P<body>[^}]*)(?P<close>\}?))")
_REF_BODY = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?\Z", re.S)
_REF_HELP = ("write ${NAME} or ${NAME:-default} (NAME: letters, digits and _, not starting "
             "with a digit), or $${ for a literal ${")


def substitute(text: str, variables: Mapping[str, str], environ: Mapping[str, str],
               limit: int | None = None) -> tuple[str, list[tuple[str, str]], bool]:
    """Replace ``${NAME}`` / ``${NAME:-default}`` in ``text``.

    Returns the new text, the problems found as ``(code, message)`` pairs,
    each distinct one once (an undefined or malformed reference is left as
    written), and whether ``text`` was exactly one reference (the caller may
    re-type the result). With ``limit``, a result longer than ``limit``
    characters is not built: ``text`` comes back unchanged with a
    ``variable-limit`` problem.
    """
    out: list[str] = []
    problems: dict[tuple[str, str], None] = {}  # an ordered set
    last = size = 0
    whole = False
    for m in _REF.finditer(text):
        piece = text[last:m.start()]
        last = m.end()
        if m.group("body") is None:  # $${
            out += (piece, "${")
            size += len(piece) + 2
            continue
        whole = m.start() == 0 and last == len(text)
        value = _expand(m, variables, environ, problems)
        out += (piece, value)
        size += len(piece) + len(value)
        if limit is not None and size > limit:  # one scalar may hold 1M references to a long value
            return text, [("variable-limit", _VARIABLE_LIMIT.format(limit=limit))], False
    out.append(text[last:])
    if limit is not None and size + len(text) - last > limit:
        return text, [("variable-limit", _VARIABLE_LIMIT.format(limit=limit))], False
    return "".join(out), list(problems), whole and not problems


_VARIABLE_LIMIT = ("${{NAME}} references expand the document past {limit:,} characters; a spec needs far "
                   "fewer: reference long values fewer times")


def _expand(m: re.Match[str], variables: Mapping[str, str], environ: Mapping[str, str],
            problems: dict[tuple[str, str], None]) -> str:
    """The value of one ``${...}`` match (or its text, with a problem noted)."""
    ref = m.group(0)
    body = _REF_BODY.match(m.group("body")) if m.group("close") else None
    if body is None or "${" in (body.group("default") or ""):
        _note(problems, "bad-variable", f"malformed variable reference {ref!r}: {_REF_HELP}")
        return ref
    name, default = body.group("name"), body.group("default")
    value = variables.get(name)
    if value is None:
        value = environ.get(name)
    if default is not None and not value:
        return default
    if value is None:
        _note(problems, "undefined-variable",
              f"undefined variable ${{{name}}}: pass --var {name}=VALUE, set {name} "
              f"in the environment, or give a default: ${{{name}:-VALUE}}")
        return ref
    return str(value)


def _note(problems: dict[tuple[str, str], None], code: str, message: str) -> None:
    if len(problems) < _MAX_PROBLEMS_PER_SCALAR:  # bounded: one scalar may hold 1M references
        problems[(code, message)] = None


_MAX_PROBLEMS_PER_SCALAR = 20


# ------------------------------------------------------------ the builder


class _Abort(Exception):
    """A problem after which the rest of the document is not read."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


class _Frame:
    """An open mapping or sequence (one per collection, not per node)."""

    __slots__ = ("value", "path", "is_map", "key", "key_path", "anchor", "count0", "chars0", "height")

    def __init__(self, value: Any, path: KeyPath, anchor: str | None, count0: int, chars0: int) -> None:
        self.value = value
        self.path = path
        self.is_map = type(value) is dict
        self.key: str | None = None
        self.key_path: KeyPath = ()
        self.anchor = anchor
        self.count0 = count0
        self.chars0 = chars0
        self.height = 1


class _Anchor:
    """What an alias copies: the value, its size and height, where it is (its
    positions are read from there when an alias needs them), and a scalar's text."""

    __slots__ = ("value", "count", "height", "path", "text", "chars")

    def __init__(self, value: Any, count: int, height: int, path: KeyPath,
                 text: str | None, chars: int = 0) -> None:
        self.value = value
        self.count = count
        self.height = height
        self.path = path
        self.text = text
        self.chars = chars


_PENDING = _Anchor(None, 0, 0, (), None)


class _Builder:
    """Builds one document from YAML events, checking limits as it goes."""

    def __init__(self, file: str, variables: Mapping[str, str] | None,
                 environ: Mapping[str, str], any_root: bool = False) -> None:
        self.file = file
        self.variables = variables
        self.environ = environ
        self.any_root = any_root
        self.positions: dict[KeyPath, Position] = {}
        self.diags: list[Diagnostic] = []
        self.stack: list[_Frame] = []
        self.anchors: dict[str, _Anchor] = {}
        self.count = 0
        self.chars = 0  # of keys and string values, aliases and ${NAME} expanded
        self.aliased = False
        self.documents = 0
        self.root: Any = None
        self.root_mark: Any = None

    # -- diagnostics

    def _diag(self, code: str, message: str, mark: Any, path: KeyPath = ()) -> Diagnostic:
        line = mark.line + 1 if mark is not None else None
        column = mark.column + 1 if mark is not None else None
        return error(code, message, format_path(path), file=self.file, line=line, column=column)

    def _fatal(self, code: str, message: str, mark: Any, path: KeyPath = ()) -> _Abort:
        return _Abort(self._diag(code, message, mark, path))

    def _report(self, diagnostic: Diagnostic) -> None:
        """Note a problem and read on, up to MAX_ERRORS (a hostile file can have millions)."""
        self.diags.append(diagnostic)
        if len(self.diags) >= MAX_ERRORS:  # located where reading stopped
            raise _Abort(error("too-many-errors", f"stopped after {MAX_ERRORS} errors: fix these first",
                               diagnostic.path, file=self.file, line=diagnostic.line, column=diagnostic.column))

    # -- the event loop

    def run(self, text: str) -> None:
        """Consume the events of ``text`` until the stream ends (or a fatal problem)."""
        handlers: dict[type, Callable[[Any], None]] = {  # local: no builder↔method cycle
            ev.ScalarEvent: self._on_scalar,
            ev.MappingStartEvent: self._on_start,
            ev.SequenceStartEvent: self._on_start,
            ev.MappingEndEvent: self._on_end,
            ev.SequenceEndEvent: self._on_end,
            ev.AliasEvent: self._on_alias,
            ev.DocumentStartEvent: self._on_document,
        }
        loader = _Loader(text)
        try:
            get, end = loader.get_event, ev.StreamEndEvent
            while True:
                event = get()
                kind = type(event)
                if kind is end or event is None:
                    return
                handler = handlers.get(kind)
                if handler is not None:
                    handler(event)
        finally:
            loader.dispose()

    def _on_document(self, event: Any) -> None:
        self.documents += 1
        if self.documents > 1:
            raise self._fatal("multiple-documents", "a spec file holds exactly one YAML document; "
                              "found a second one ('---'): split it into separate files",
                              event.start_mark)

    # -- placing a value

    def _next_path(self) -> KeyPath:
        if not self.stack:
            return ()
        top = self.stack[-1]
        return top.key_path if top.is_map else top.path + (len(top.value),)

    def _attach(self, top: _Frame | None, value: Any, mark: Any) -> KeyPath:
        """Put ``value`` in the open collection ``top`` (or make it the root); its path."""
        if top is None:
            self.root = value
            self.root_mark = mark
            self.positions[()] = _pos(self.file, mark.line + 1, mark.column + 1)
            return ()
        if top.is_map:
            top.value[top.key] = value
            top.key = None
            return top.key_path
        items = top.value
        path = top.path + (len(items),)
        self.positions[path] = _pos(self.file, mark.line + 1, mark.column + 1)
        items.append(value)
        return path

    def _tick(self, n: int, mark: Any, path: KeyPath) -> None:
        self.count += n
        if self.count > MAX_NODES:
            if self.aliased:
                raise self._fatal("alias-limit", f"the document expands to more than {MAX_NODES:,} "
                                  "nodes through aliases (*name); a spec needs far fewer: "
                                  "write the repeated parts out or use `defaults:`", mark, path)
            raise self._fatal("too-many-nodes", f"the document has more than {MAX_NODES:,} nodes; "
                              "a spec needs far fewer", mark, path)

    def _spend(self, n: int, mark: Any, path: KeyPath) -> None:
        """Count ``n`` characters of the built document against MAX_CHARS."""
        self.chars += n
        if self.chars > MAX_CHARS:
            raise self._fatal("alias-limit", f"the document expands to more than {MAX_CHARS:,} characters "
                              "through aliases (*name); a spec needs far fewer: write the repeated parts "
                              "out or use `defaults:`", mark, path)

    # -- keys

    def _wants_key(self) -> bool:
        return bool(self.stack) and self.stack[-1].is_map and self.stack[-1].key is None

    def _on_key(self, text: str, mark: Any) -> None:
        top = self.stack[-1]
        path = top.path + (text,)
        self.count += 1
        if self.count > MAX_NODES:
            self._tick(0, mark, path)
        self.chars += len(text)
        if self.chars > MAX_CHARS:
            self._spend(0, mark, path)
        if text in top.value:
            self._duplicate(text, mark, path)
        else:
            if text == "<<":
                self._report(self._diag(
                    "yaml-merge-key", "YAML merge keys ('<<') are not supported: write the keys "
                    "out, or put shared pool settings under `defaults:`", mark, path))
            self.positions[path] = _pos(self.file, mark.line + 1, mark.column + 1)
        top.key = text
        top.key_path = path

    def _duplicate(self, text: str, mark: Any, path: KeyPath) -> None:
        first = self.positions[path]
        self._report(self._diag(
            "duplicate-key", f"duplicate key {text!r} (first defined at line {first.line}): "
            "YAML keys must be unique in a mapping; remove one of them", mark, path))

    # -- scalars (the hot path: most events are scalars, so this is kept flat)

    def _on_scalar(self, event: Any) -> None:
        stack = self.stack
        top = stack[-1] if stack else None
        if top is not None and top.is_map and top.key is None:
            if event.tag is not None:
                self._check_tag(event.tag, _SCALAR_TAGS, event.start_mark, top.path)
            self._on_key(event.value, event.start_mark)
            if event.anchor is not None:
                self.anchors[event.anchor] = _Anchor(event.value, 1, 0, (), event.value, len(event.value))
            return
        text = event.value
        if event.tag is None:
            value = _PLAIN_CACHE.get(text, _MISSING) if event.implicit[0] else text
            if value is _MISSING:
                value = _plain(text)
        else:
            value = self._typed(event, self._next_path())
        if type(value) is str:
            if "$" in value and self.variables is not None:
                value = self._substitute(event, value, self._next_path())  # may re-type it
            self.chars += len(value) if type(value) is str else 0
            if self.chars > MAX_CHARS:
                self._spend(0, event.start_mark, self._next_path())
        self.count += 1
        if self.count > MAX_NODES:
            self._tick(0, event.start_mark, self._next_path())
        self._attach(top, value, event.start_mark)
        if event.anchor is not None:
            self.anchors[event.anchor] = _Anchor(value, 1, 0, (), text,
                                                 len(value) if type(value) is str else 0)

    def _typed(self, event: Any, path: KeyPath) -> Any:
        tag = event.tag
        if tag is None:
            return _plain(event.value) if event.implicit[0] else event.value
        if tag == "!":  # the non-specific tag means "a string" (YAML 1.1 §4.3.2; PyYAML differs)
            return event.value
        if not self._check_tag(tag, _SCALAR_TAGS, event.start_mark, path):
            return event.value
        try:
            return _construct(tag, event.value)
        except Exception:  # PyYAML raises ValueError/KeyError/IndexError on bad text
            self._report(self._diag(
                "yaml-tag", f"{event.value!r} is not a valid {tag.replace(_TAG, '!!')}: "
                "fix the value or drop the tag", event.start_mark, path))
            return event.value

    def _check_tag(self, tag: str | None, allowed: set[str], mark: Any, path: KeyPath) -> bool:
        if tag is None or tag == "!" or tag in allowed:
            return True
        shown = tag.replace(_TAG, "!!")
        names = ", ".join(sorted(t.replace(_TAG, "!!") for t in allowed))
        self._report(self._diag(
            "yaml-tag", f"YAML tag {shown!r} is not allowed here; accepted: {names}, or none",
            mark, path))
        return False

    def _substitute(self, event: Any, text: str, path: KeyPath) -> Any:
        assert self.variables is not None
        value, problems, whole = substitute(text, self.variables, self.environ, MAX_CHARS - self.chars)
        if problems and problems[0][0] == "variable-limit":  # named with the document's limit
            raise self._fatal("variable-limit", _VARIABLE_LIMIT.format(limit=MAX_CHARS), event.start_mark, path)
        for code, message in problems:
            self._report(self._diag(code, message, event.start_mark, path))
        if whole and event.tag is None and event.implicit[0]:
            return _plain(value)
        return value

    # -- collections

    def _on_start(self, event: Any) -> None:
        stack = self.stack
        top = stack[-1] if stack else None
        mark = event.start_mark
        if top is not None and top.is_map and top.key is None:
            raise self._fatal("yaml-key", "a mapping key must be a plain value, not a list or "
                              "mapping", mark, top.path)
        if len(stack) >= MAX_DEPTH:
            raise self._fatal("too-deep", f"nesting deeper than {MAX_DEPTH} levels; a spec needs "
                              "far fewer: flatten the structure", mark, self._next_path())
        kind = type(event)
        if event.tag is not None:
            self._check_tag(event.tag, {_COLLECTION_TAGS[kind]}, mark, self._next_path())
        value: Any = {} if kind is ev.MappingStartEvent else []
        self.count += 1
        if self.count > MAX_NODES:
            self._tick(0, mark, self._next_path())
        path = self._attach(top, value, mark)
        if event.anchor is not None:
            self.anchors[event.anchor] = _PENDING
        stack.append(_Frame(value, path, event.anchor, self.count - 1, self.chars))

    def _on_end(self, event: Any) -> None:
        stack = self.stack
        frame = stack.pop()
        if stack and stack[-1].height <= frame.height:
            stack[-1].height = frame.height + 1
        if frame.anchor is not None:
            self.anchors[frame.anchor] = _Anchor(frame.value, self.count - frame.count0,
                                                 frame.height, frame.path, None, self.chars - frame.chars0)

    # -- aliases

    def _on_alias(self, event: Any) -> None:
        mark = event.start_mark
        anchor = self.anchors.get(event.anchor)
        if anchor is None or anchor is _PENDING:
            why = "is not defined before it" if anchor is None else "is inside its own anchor"
            raise self._fatal("yaml-alias", f"alias *{event.anchor} {why}; anchors (&name) must "
                              "come first and cannot contain themselves", mark, self._next_path())
        if self._wants_key():
            if anchor.text is None:
                raise self._fatal("yaml-key", "a mapping key must be a plain value, not a list or "
                                  "mapping", mark, self.stack[-1].path)
            self._on_key(anchor.text, mark)
            return
        self._on_alias_value(anchor, mark)

    def _on_alias_value(self, anchor: _Anchor, mark: Any) -> None:
        path = self._next_path()
        self.aliased = True
        self._tick(anchor.count, mark, path)
        self._spend(anchor.chars, mark, path)
        if len(self.stack) + anchor.height > MAX_DEPTH:
            raise self._fatal("too-deep", f"an alias nests deeper than {MAX_DEPTH} levels",
                              mark, path)
        top = self.stack[-1] if self.stack else None
        self._attach(top, _copy(anchor.value), mark)
        if top is not None and top.height <= anchor.height:
            top.height = anchor.height + 1
        positions = self.positions
        for rel in _inner_paths(anchor.value):  # within the node budget ticked above
            pos = positions.get(anchor.path + rel)
            if pos is not None:
                positions[path + rel] = pos

    # -- the result

    def result(self) -> Any:
        """The root after the stream ended, or None with an error noted."""
        root = self.root
        if self.documents == 0 or (root is None and not self.any_root):
            self.diags.append(error("empty-spec", "empty spec: the file holds no YAML document; "
                                    "a spec is a mapping like `display_name: my-job`",
                                    file=self.file, line=1, column=1))
            return None
        if type(root) is not dict and not self.any_root:
            kind = "a list" if type(root) is list else f"the scalar {root!r}"
            self.diags.append(self._diag("root-not-mapping", f"the spec must be a mapping of keys "
                                         f"(like `display_name: my-job`), not {kind}",
                                         self.root_mark))
            return None
        return root


def _inner_paths(value: Any) -> list[KeyPath]:
    """The path, relative to ``value``, of every node under it (iterative)."""
    out: list[KeyPath] = []
    todo: list[tuple[KeyPath, Any]] = [((), value)]
    while todo:
        path, node = todo.pop()
        kind = type(node)
        if kind is dict or kind is list:
            pairs = node.items() if kind is dict else enumerate(node)
            for key, child in pairs:
                out.append(path + (key,))
                todo.append((path + (key,), child))
    return out


def _copy(value: Any) -> Any:
    """Deep copy of plain data (depth is bounded by MAX_DEPTH)."""
    kind = type(value)
    if kind is dict:
        return {k: _copy(v) for k, v in value.items()}
    if kind is list:
        return [_copy(v) for v in value]
    return value


# -------------------------------------------------------- syntax errors

_TAB_HINT = "YAML does not allow tabs for indentation: indent with spaces"
_CONTROL_HINT = "remove the control character, or write it as an escape (\\x07) in a double-quoted string"
# (fragment of the problem, fragment of the context, hint): both must match.
_HINTS = (
    ("end of stream", "quoted scalar", "a quoted string is not closed: check for a missing ' or \""),
    ("", "flow sequence", "a '[' is not closed, or list items are missing a ','"),
    ("", "flow mapping", "a '{' is not closed, or entries are missing a ','"),
    ("mapping values are not allowed", "", "a value contains ': ': quote the value"),
    ("could not find expected ':'", "", "a line lacks ':' after its key, or a continued value "
                                        "is not indented"),
    ("did not find expected key", "", "check the indentation of this line and the one before"),
    ("did not find expected '-'", "", "check the indentation of the list items"),
    ("control characters", "", _CONTROL_HINT),
    ("special characters", "", _CONTROL_HINT),
)


def _syntax_diag(exc: yaml.YAMLError, text: str, file: str) -> Diagnostic:
    """``yaml-syntax`` from a PyYAML error: its problem text, mark and a hint."""
    problem = str(getattr(exc, "problem", None) or getattr(exc, "reason", None) or exc)
    context = str(getattr(exc, "context", None) or "")
    mark = getattr(exc, "problem_mark", None)
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else _offset_mark(exc, text)
    message = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    hint = _TAB_HINT if _tab_at(text, line, column) else next(
        (h for p, c, h in _HINTS if p in problem and c in context), "")
    return error("yaml-syntax", message + (f"; hint: {hint}" if hint else ""),
                 file=file, line=line, column=column)


def _tab_at(text: str, line: int | None, column: int | None) -> bool:
    """Whether the error sits on a tab, or its line is indented with one."""
    lines = text.splitlines()
    if line is None or column is None or not 0 < line <= len(lines):
        return False
    here = lines[line - 1]
    indent = here[:len(here) - len(here.lstrip(" \t"))]
    return "\t" in indent or here[column - 1:column] == "\t"


def _offset_mark(exc: Exception, text: str) -> tuple[int | None, int | None]:
    """Line and column of a ReaderError or UnicodeEncodeError (they give a character offset only)."""
    offset = getattr(exc, "position", getattr(exc, "start", None))
    if not isinstance(offset, int) or not 0 <= offset <= len(text):
        return None, None
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


# --------------------------------------------------------------- public


def _decode(raw: bytes, file: str) -> tuple[str | None, list[Diagnostic]]:
    try:
        return raw.decode("utf-8-sig"), []
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1  # in bytes: the text is not decodable
        return None, [error("encoding", f"the file is not UTF-8 text (byte 0x{raw[exc.start]:02x} "
                            f"at offset {exc.start}): save it as UTF-8", file=file, line=line, column=column)]


def _too_large(size: int | None, file: str) -> Diagnostic:
    said = f"{size:,} bytes" if size is not None else f"more than {MAX_FILE_BYTES:,} bytes"
    return error("too-large", f"the file is too large ({said}; the limit is {MAX_FILE_BYTES:,} "
                 "bytes): a spec needs far less", file=file)


_GC_OFF_ABOVE = 64 * 1024  # characters


def _parse(text: str, file: str, variables: Mapping[str, str] | None, environ: Mapping[str, str],
           any_root: bool = False) -> tuple[Any, dict[KeyPath, Position], list[Diagnostic]]:
    """Build the data of ``text``; (None, {}, errors) when it cannot be used."""
    if len(text) > MAX_FILE_BYTES // 4 and (  # a char is 1 to 4 bytes: encode only when unsure
            len(text) > MAX_FILE_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES):
        return None, {}, [_too_large(None, file)]
    builder = _Builder(file, variables, environ, any_root)
    # The builder makes only acyclic data: GC passes cost ~30% on big inputs, but
    # on a typical few-KiB spec switching GC off and on costs more than it saves.
    collecting = gc.isenabled() and len(text) > _GC_OFF_ABOVE
    if collecting:
        gc.disable()
    try:
        fatal = _run(builder, text)
    finally:
        if collecting:
            gc.enable()
    if fatal is not None:
        return None, {}, builder.diags + [fatal]
    root = builder.result()
    if any(d.severity == "error" for d in builder.diags):
        return None, {}, builder.diags
    return root, builder.positions, builder.diags


def _run(builder: _Builder, text: str) -> Diagnostic | None:
    """Run ``builder`` over ``text``; the problem that stopped it, if any."""
    try:
        builder.run(text)
    except _Abort as abort:
        return abort.diagnostic
    except yaml.YAMLError as exc:
        return _syntax_diag(exc, text, builder.file)
    except UnicodeEncodeError as exc:
        line, column = _offset_mark(exc, text)
        return error("encoding", f"the text holds a character that is not valid Unicode (a lone surrogate, "
                     f"{exc.object[exc.start]!r}): save it as UTF-8", file=builder.file, line=line,
                     column=column)
    return None


def load_text(text: str | bytes, file: str = "<string>", *, variables: Mapping[str, str] = {},
              environ: Mapping[str, str] | None = None) -> tuple[Document | None, list[Diagnostic]]:
    """Load one spec from text (or UTF-8 bytes): see the module docstring.

    Returns ``(Document, warnings)``, or ``(None, diagnostics)`` with at least
    one error when the text cannot be used. Never raises for any input.
    """
    env = os.environ if environ is None else environ
    try:
        if isinstance(text, bytes):
            if len(text) > MAX_FILE_BYTES:
                return None, [_too_large(len(text), file)]
            decoded, diags = _decode(text, file)
            if decoded is None:
                return None, diags
            text = decoded
        data, positions, diags = _parse(text, file, variables, env)
    except Exception as exc:  # a bug in vxtrain: report it, never a traceback (DESIGN.md)
        return None, [_internal(exc, file)]
    if data is None:
        return None, diags
    return Document(data=data, file=file, positions=positions), diags


def _internal(exc: Exception, file: str) -> Diagnostic:
    return error("internal-error", f"vxtrain could not load this file ({type(exc).__name__}: "
                 f"{exc}); please report it", file=file)


def _read(path: str | Path) -> tuple[str | None, list[Diagnostic]]:
    """The text of a spec file, or diagnostics (missing, a folder, too large, not UTF-8)."""
    file = str(path)
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            return None, [error("file-unreadable", f"{file} is a directory, not a spec file",
                                file=file)]
        if st.st_size > MAX_FILE_BYTES:
            return None, [_too_large(st.st_size, file)]
        with open(path, "rb") as handle:
            # bounded: the file may have grown since stat, and st_size is 0 for pipes
            first = st.st_size + 1 if stat.S_ISREG(st.st_mode) else MAX_FILE_BYTES + 1
            raw = handle.read(first)
            if len(raw) == first and first <= MAX_FILE_BYTES:
                raw += handle.read(MAX_FILE_BYTES + 1 - first)
    except FileNotFoundError:
        return None, [error("file-not-found", f"no such file: {file}", file=file)]
    except OSError as exc:
        return None, [error("file-unreadable", f"cannot read {file}: {exc.strerror or exc}",
                            file=file)]
    if len(raw) > MAX_FILE_BYTES:
        return None, [_too_large(None, file)]
    return _decode(raw, file)


def _load_file(path: str | Path, variables: Mapping[str, str],
               environ: Mapping[str, str]) -> tuple[Document | None, list[Diagnostic]]:
    text, diags = _read(path)
    if text is None:
        return None, diags
    return load_text(text, str(path), variables=variables, environ=environ)


def load(path: str | Path, *, overlays: Sequence[str | Path] = (), sets: Sequence[str] = (),
         variables: Mapping[str, str] = {},
         environ: Mapping[str, str] | None = None) -> tuple[Document | None, list[Diagnostic]]:
    """Load a spec file, merge ``overlays`` over it in order, then apply ``sets``.

    Overlay semantics: mappings merge recursively, lists and scalars replace,
    and an overlay value of ``null`` deletes the key from the result. Every
    file is checked (all problems are reported, each naming its own file).
    Returns ``(Document, warnings)`` or ``(None, diagnostics)``; never raises.
    """
    env = os.environ if environ is None else environ
    try:
        return _load(path, overlays, sets, variables, env)
    except Exception as exc:  # a bug in vxtrain: report it, never a traceback (DESIGN.md)
        return None, [_internal(exc, str(path))]


def _load(path: str | Path, overlays: Sequence[str | Path], sets: Sequence[str],
          variables: Mapping[str, str],
          environ: Mapping[str, str]) -> tuple[Document | None, list[Diagnostic]]:
    doc, diags = _load_file(path, variables, environ)
    for overlay in overlays:
        over, more = _load_file(overlay, variables, environ)
        diags += more
        if doc is not None and over is not None:
            _merge(doc.data, over.data, (), doc.positions, over.positions)
    assignments: list[SetAssignment | None] = []
    for index, arg in enumerate(sets):
        parsed, more = parse_set(arg, index + 1)
        diags += more
        assignments.append(parsed)
    if doc is None or any(d.severity == "error" for d in diags):
        return None, diags
    for parsed in assignments:
        diags += _apply_set(doc, *parsed) if parsed else []
    return (None if any(d.severity == "error" for d in diags) else doc), diags


# ------------------------------------------------------------ overlays


def _merge(base: dict[str, Any], over: dict[str, Any], path: KeyPath,
           positions: dict[KeyPath, Position], over_positions: Mapping[KeyPath, Position]) -> None:
    """Deep-merge ``over`` into ``base`` in place (null deletes), moving positions along."""
    for key, value in over.items():
        kp = path + (key,)
        old = base.get(key, _MISSING)
        if type(old) is dict and type(value) is dict:
            _merge(old, value, kp, positions, over_positions)
            continue
        if old is not _MISSING:
            _drop(positions, kp, old)
            del base[key]
        if value is not None:
            base[key] = value
            _graft(positions, over_positions, kp, value)



def _subpaths(path: KeyPath, value: Any) -> Iterator[KeyPath]:
    """``path`` and the path of every node under it."""
    yield path
    if type(value) is dict:
        for key, child in value.items():
            yield from _subpaths(path + (key,), child)
    elif type(value) is list:
        for index, child in enumerate(value):
            yield from _subpaths(path + (index,), child)


def _drop(positions: dict[KeyPath, Position], path: KeyPath, value: Any) -> None:
    for sub in _subpaths(path, value):
        positions.pop(sub, None)


def _graft(positions: dict[KeyPath, Position], source: Mapping[KeyPath, Position],
           path: KeyPath, value: Any) -> None:
    for sub in _subpaths(path, value):
        pos = source.get(sub)
        if pos is not None:
            positions[sub] = pos


# ---------------------------------------------------------------- --set

_SEGMENT = re.compile(r"(?P<name>[^.\[\]]+)(?P<indices>(?:\[\d+\])*)\Z")
_SET_HELP = "write --set dotted.key=value, e.g. workers.replicas=4 or defaults.args[0]=--epochs=5"


#: One parsed --set: key path, typed value, its Position, and the argument as given.
SetAssignment = tuple[KeyPath, Any, Position, str]


def parse_set(arg: str, column: int = 1) -> tuple[SetAssignment | None, list[Diagnostic]]:
    """Parse one ``--set`` argument into (key path, typed value, position, arg).

    ``column`` is the 1-based index of the argument among the --set options;
    it becomes the Position (file ``--set``, line 1) of what the value sets.
    """
    def bad(why: str) -> tuple[None, list[Diagnostic]]:
        return None, [error("set-syntax", f"--set {arg!r}: {why}; {_SET_HELP}",
                            file="--set", line=1, column=column)]

    key, eq, text = arg.partition("=")
    if not eq:
        return bad("no '=' between the key and the value")
    path: list[str | int] = []
    for segment in key.split("."):
        m = _SEGMENT.match(segment)
        if m is None:
            return bad(f"bad key segment {segment!r} (empty, or a malformed [N] index)")
        path.append(m.group("name"))
        path += [int(i) for i in re.findall(r"\[(\d+)\]", m.group("indices"))]
    value, diags = _set_value(text)
    if diags:
        return bad(f"the value is not valid YAML ({diags[0].message})")
    return (tuple(path), value, _pos("--set", 1, column), arg), []


def _set_value(text: str) -> tuple[Any, list[Diagnostic]]:
    if not text.strip():
        return text, []
    value, _, diags = _parse(text, "--set", None, {}, any_root=True)
    if any(d.code == "empty-spec" for d in diags):  # only a comment, e.g. x=#ff0000
        return text, []
    return value, [d for d in diags if d.severity == "error"]


def _apply_set(doc: Document, path: KeyPath, value: Any, pos: Position, arg: str) -> list[Diagnostic]:
    """Assign ``value`` at ``path`` in ``doc``, creating intermediate mappings."""
    cur: Any = doc.data
    for depth, key in enumerate(path):
        where = path[:depth + 1]
        last = depth == len(path) - 1
        problem = _set_step_problem(cur, key, last, path[:depth])
        if problem:
            return [error("set-syntax", f"--set {arg!r}: {problem}", format_path(where),
                          file="--set", line=pos.line, column=pos.column)]
        if last:
            _assign(doc.positions, cur, key, value, where, pos)
            break
        if type(cur) is dict and cur.get(key) is None and isinstance(path[depth + 1], str):
            cur[key] = {}  # an intermediate mapping, created (missing or null)
            doc.positions[where] = pos
        cur = cur.get(key) if type(cur) is dict else cur[key]
    return []


def _set_step_problem(cur: Any, key: str | int, last: bool, parent: KeyPath) -> str:
    """Why ``key`` cannot be used on ``cur`` (empty when it can)."""
    shown = format_path(parent) or "the document root"
    if isinstance(key, int):
        if type(cur) is not list:
            kind = "missing" if cur is None else f"a {type(cur).__name__}"
            return f"{shown} is {kind}, not a list, so [{key}] cannot index it"
        limit = len(cur) if last else len(cur) - 1
        return "" if key <= limit else f"index [{key}] is past the end of {shown} ({len(cur)} items)"
    if type(cur) is not dict:
        kind = "missing" if cur is None else f"a {type(cur).__name__}"
        return f"{shown} is {kind}, not a mapping, so it has no key {key!r}"
    return ""


def _assign(positions: dict[KeyPath, Position], cur: list[Any] | dict[str, Any], key: str | int,
            value: Any, path: KeyPath, pos: Position) -> None:
    """``cur[key] = value`` (``_set_step_problem`` checked that the key fits ``cur``)."""
    if isinstance(cur, list):
        assert isinstance(key, int)
        if key == len(cur):
            cur.append(None)
        else:
            _drop(positions, path, cur[key])
        cur[key] = _copy(value)
    else:
        assert isinstance(key, str)
        _drop(positions, path, cur.get(key))
        cur[key] = _copy(value)
    for sub in _subpaths(path, value):
        positions[sub] = pos
