"""The event builder: YAML events → plain data + the position of every key.

The document is built *iteratively* from PyYAML's event stream (libyaml's
parser when available), never with the recursive composer/constructor, so the
limits (``limits.py``) are enforced while the document is being built, before
a hostile file can cost time or memory.

YAML rules, in short: scalars are typed with PyYAML's SafeLoader resolver
(``scalars.py``); explicit tags other than ``!!str !!int !!float !!bool !!null
!!map !!seq`` are errors; keys are always the key's source text (``on:``,
``yes:`` and ``1:`` stay strings); duplicate keys are errors (PyYAML would
keep the last silently); exactly one document whose root is a mapping; YAML
merge keys (``<<``) are refused. ``${NAME}`` references in string values are
substituted as each scalar is built (``variables.py``), within ``MAX_CHARS``.

This is the hot path of bulk validation: one object per collection (never per
scalar), a flat scalar handler, and positions made without the dataclass
``__init__``.
"""
from __future__ import annotations

import gc
from collections.abc import Callable, Mapping
from typing import Any

import yaml
from yaml import events as ev

from vxtrain.diagnostics import Diagnostic, error
from vxtrain.loading.document import KeyPath, Position, format_path
from vxtrain.loading.hints import offset_mark, syntax_diag
from vxtrain.loading.limits import MAX_CHARS, MAX_DEPTH, MAX_ERRORS, MAX_FILE_BYTES, MAX_NODES
from vxtrain.loading.read import too_large
from vxtrain.loading.scalars import PLAIN_CACHE, TAG, construct, plain
from vxtrain.loading.variables import VARIABLE_LIMIT, substitute

# CSafeLoader is libyaml's parser plus the safe constructor; only its parser
# (get_event) is used. The pure-Python SafeLoader is the fallback.
_Loader: Any = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
_SCALAR_TAGS = {TAG + name for name in ("str", "int", "float", "bool", "null")}
_COLLECTION_TAGS = {ev.MappingStartEvent: TAG + "map", ev.SequenceStartEvent: TAG + "seq"}
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
            ev.AliasEvent: self._on_alias,
            ev.DocumentStartEvent: self._on_document,
        }
        loader = _Loader(text)
        try:
            self._loop(loader.get_event, handlers)
        finally:
            loader.dispose()

    def _loop(self, get: Callable[[], Any], handlers: dict[type, Callable[[Any], None]]) -> None:
        """The event loop (the hot path of bulk validation).

        The common events are handled here, inline: untagged, unanchored scalars
        and collections within the limits (the same steps ``_on_scalar``,
        ``_on_key``, ``_on_start`` and ``_attach`` take, without their calls) and
        every collection's end. Anything else — a tag, an anchor, an alias, a
        ``${NAME}``, a duplicate or merge key, a limit reached — goes to its
        handler, which reports it.
        """
        stack, positions, file, variables = self.stack, self.positions, self.file, self.variables
        scalar_event, end = ev.ScalarEvent, ev.StreamEndEvent
        map_start, seq_start = ev.MappingStartEvent, ev.SequenceStartEvent
        map_end, seq_end = ev.MappingEndEvent, ev.SequenceEndEvent
        cache_get, new, max_nodes, max_chars, max_depth = PLAIN_CACHE.get, _NEW, MAX_NODES, MAX_CHARS, MAX_DEPTH
        # self.count and self.chars live in locals here; they are handed back to self
        # around every call of a handler (which reads and updates them).
        count, chars = self.count, self.chars
        while True:
            event = get()
            kind = type(event)
            if kind is scalar_event and stack and event.tag is None and event.anchor is None:
                top = stack[-1]
                text = event.value
                if top.is_map and top.key is None:  # a key
                    if text == "<<" or text in top.value or count >= max_nodes or chars + len(text) > max_chars:
                        # a merge key, a duplicate or a limit reached: reported there
                        self.count, self.chars = count, chars
                        self._on_scalar(event)
                        count, chars = self.count, self.chars
                        continue
                    path = top.path + (text,)
                    count += 1
                    chars += len(text)
                    mark = event.start_mark
                    pos = new(Position)
                    d = pos.__dict__
                    d["file"] = file
                    d["line"] = mark.line + 1
                    d["column"] = mark.column + 1
                    positions[path] = pos
                    top.key = text
                    top.key_path = path
                    continue
                if event.implicit[0]:
                    value = cache_get(text, _MISSING)
                    if value is _MISSING:
                        value = plain(text)
                else:
                    value = text
                size = len(value) if type(value) is str else 0
                if (size and variables is not None and "$" in value) or chars + size > max_chars or count >= max_nodes:
                    # a ${NAME} to substitute, or a limit reached: handled there
                    self.count, self.chars = count, chars
                    self._on_scalar(event)
                    count, chars = self.count, self.chars
                    continue
                chars += size
                count += 1
                if top.is_map:
                    top.value[top.key] = value
                    top.key = None
                    continue
                items = top.value
                mark = event.start_mark
                pos = new(Position)
                d = pos.__dict__
                d["file"] = file
                d["line"] = mark.line + 1
                d["column"] = mark.column + 1
                positions[top.path + (len(items),)] = pos
                items.append(value)
                continue
            if kind is map_end or kind is seq_end:
                frame = stack.pop()
                if stack and stack[-1].height <= frame.height:
                    stack[-1].height = frame.height + 1
                if frame.anchor is not None:
                    self.count, self.chars = count, chars
                    self._anchored(frame)
                continue
            if ((kind is map_start or kind is seq_start) and stack and event.tag is None
                    and event.anchor is None and len(stack) < max_depth and count < max_nodes
                    and (not stack[-1].is_map or stack[-1].key is not None)):
                top = stack[-1]
                value = {} if kind is map_start else []
                if top.is_map:
                    top.value[top.key] = value
                    top.key = None
                    path = top.key_path
                else:
                    items = top.value
                    path = top.path + (len(items),)
                    mark = event.start_mark
                    pos = new(Position)
                    d = pos.__dict__
                    d["file"] = file
                    d["line"] = mark.line + 1
                    d["column"] = mark.column + 1
                    positions[path] = pos
                    items.append(value)
                count += 1
                stack.append(_Frame(value, path, None, count - 1, chars))
                continue
            self.count, self.chars = count, chars
            if kind is end or event is None:
                return
            handler = handlers.get(kind)
            if handler is not None:
                handler(event)  # a root, a tag, an anchor, an alias, a document, a limit reached
            count, chars = self.count, self.chars

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

    def _on_key(self, text: str, mark: Any, plain_key: bool = False) -> None:
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
            # Only a plain, untagged `<<` is a merge key in YAML 1.1; `'<<'` is a string.
            if plain_key and text == "<<":
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
            self._on_key(event.value, event.start_mark, event.tag is None and event.implicit[0])
            if event.anchor is not None:
                self.anchors[event.anchor] = _Anchor(event.value, 1, 0, (), event.value, len(event.value))
            return
        text = event.value
        if event.tag is None:
            value = PLAIN_CACHE.get(text, _MISSING) if event.implicit[0] else text
            if value is _MISSING:
                value = plain(text)
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
            return plain(event.value) if event.implicit[0] else event.value
        if tag == "!":  # the non-specific tag means "a string" (YAML 1.1 §4.3.2; PyYAML differs)
            return event.value
        if not self._check_tag(tag, _SCALAR_TAGS, event.start_mark, path):
            return event.value
        try:
            return construct(tag, event.value)
        except (ValueError, LookupError):  # what PyYAML's int/float/bool constructors raise on bad text
            self._report(self._diag(
                "yaml-tag", f"{event.value!r} is not a valid {tag.replace(TAG, '!!')}: "
                "fix the value or drop the tag", event.start_mark, path))
            return event.value

    def _check_tag(self, tag: str | None, allowed: set[str], mark: Any, path: KeyPath) -> bool:
        if tag is None or tag == "!" or tag in allowed:
            return True
        shown = tag.replace(TAG, "!!")
        names = ", ".join(sorted(t.replace(TAG, "!!") for t in allowed))
        self._report(self._diag(
            "yaml-tag", f"YAML tag {shown!r} is not allowed here; accepted: {names}, or none",
            mark, path))
        return False

    def _substitute(self, event: Any, text: str, path: KeyPath) -> Any:
        assert self.variables is not None
        value, problems, whole = substitute(text, self.variables, self.environ, MAX_CHARS - self.chars)
        if problems and problems[0][0] == "variable-limit":  # named with the document's limit
            raise self._fatal("variable-limit", VARIABLE_LIMIT.format(limit=MAX_CHARS), event.start_mark, path)
        for code, message in problems:
            self._report(self._diag(code, message, event.start_mark, path))
        if whole and event.tag is None and event.implicit[0]:
            return plain(value)
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

    def _anchored(self, frame: _Frame) -> None:
        """Record an anchored collection, now complete, for its aliases."""
        assert frame.anchor is not None
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
        self._attach(top, copy_data(anchor.value), mark)
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


def copy_data(value: Any) -> Any:
    """Deep copy of plain data (depth is bounded by MAX_DEPTH): an alias or a
    ``--set`` value never shares objects with another place in the document."""
    kind = type(value)
    if kind is dict:
        return {k: copy_data(v) for k, v in value.items()}
    if kind is list:
        return [copy_data(v) for v in value]
    return value


_GC_OFF_ABOVE = 64 * 1024  # characters


def parse(text: str, file: str, variables: Mapping[str, str] | None, environ: Mapping[str, str],
          any_root: bool = False) -> tuple[Any, dict[KeyPath, Position], list[Diagnostic]]:
    """Build the data of ``text``: (data, positions, warnings), or (None, {}, errors)
    when it cannot be used.

    ``variables=None`` turns ``${NAME}`` substitution off; ``any_root`` accepts
    any root (a ``--set`` value), not only a mapping.
    """
    if len(text) > MAX_FILE_BYTES // 4 and (  # a char is 1 to 4 bytes: encode only when unsure
            len(text) > MAX_FILE_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES):
        return None, {}, [too_large(None, file)]
    # The builder makes only acyclic data: GC passes cost ~30% on big inputs, but
    # on a typical few-KiB spec switching GC off and on costs more than it saves.
    collecting = gc.isenabled() and len(text) > _GC_OFF_ABOVE
    if collecting:
        gc.disable()
    try:
        builder, fatal = _build(text, file, variables, environ, any_root)
    finally:
        if collecting:
            gc.enable()
    if fatal is not None:
        return None, {}, builder.diags + [fatal]
    root = builder.result()
    if any(d.severity == "error" for d in builder.diags):
        return None, {}, builder.diags
    return root, builder.positions, builder.diags


def _build(text: str, file: str, variables: Mapping[str, str] | None, environ: Mapping[str, str],
           any_root: bool) -> tuple[_Builder, Diagnostic | None]:
    """A builder run over ``text``, and the problem that stopped it, if any."""
    builder = _Builder(file, variables, environ, any_root)
    try:
        builder.run(text)
    except _Abort as abort:
        return builder, abort.diagnostic
    except yaml.YAMLError as exc:
        cut = nesting_cut(exc)
        if cut is None:
            return builder, syntax_diag(exc, text, file)
        return _too_deep(builder, text, cut, exc)
    except UnicodeEncodeError as exc:
        line, column = offset_mark(exc, text)
        return builder, error("encoding", f"the text holds a character that is not valid Unicode (a lone "
                              f"surrogate, {exc.object[exc.start]!r}): save it as UTF-8", file=file,
                              line=line, column=column)
    return builder, None


#: The problem libyaml (0.2.6, in PyYAML 6.0.4's wheels) reports past its own nesting limit.
_LIBYAML_NESTING = "exceeded maximum nesting depth"


def nesting_cut(exc: yaml.YAMLError) -> int | None:
    """Where PyYAML stopped at its own nesting limit (a character offset), else None.

    libyaml's limit (1,000 levels) is far above ``MAX_DEPTH``, but its scanner
    reads up to 1,024 characters ahead of the events it has given, so on a
    line like ``x: [[[[…`` it stops before ``MAX_DEPTH`` is reached in events.
    """
    mark = getattr(exc, "problem_mark", None)
    if getattr(exc, "problem", None) != _LIBYAML_NESTING or mark is None:
        return None
    return int(mark.index)


def _too_deep(builder: _Builder, text: str, cut: int, exc: yaml.YAMLError) -> tuple[_Builder, Diagnostic]:
    """``too-deep`` where MAX_DEPTH is passed, when PyYAML stopped at its own limit first.

    The text up to where PyYAML stopped nests deeper than MAX_DEPTH (its limit
    is above ours) but not past PyYAML's limit: built again, it stops at
    MAX_DEPTH with the diagnostic (and the problems before it) a parser
    without a limit gives. Should it not (it always has), ``too-deep`` at
    PyYAML's mark.
    """
    if cut < len(text):  # always (the mark is where it stopped); each retry is shorter
        again, fatal = _build(text[:cut], builder.file, builder.variables, builder.environ, builder.any_root)
        if fatal is not None and fatal.code == "too-deep":
            return again, fatal
    mark = getattr(exc, "problem_mark", None)
    return builder, builder._diag("too-deep", f"nesting deeper than {MAX_DEPTH} levels; a spec needs "
                                  "far fewer: flatten the structure", mark, builder._next_path())
