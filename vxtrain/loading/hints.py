"""YAML syntax errors → one located ``yaml-syntax`` diagnostic with a hint.

PyYAML's messages name the parser's state ("while scanning a quoted
scalar"); the hint says what the user most likely got wrong.
"""
from __future__ import annotations

import yaml

from vxtrain.diagnostics import Diagnostic, error

_TAB_HINT = "YAML does not allow tabs for indentation: indent with spaces"
_CONTROL_HINT = "remove the control character, or write it as an escape (\\x07) in a double-quoted string"
# '{' ends a plain scalar inside [ ] and { } (YAML's flow indicators), so `{replicas: ${N}}`
# is a syntax error before any ${VAR} is substituted: https://yaml.org/spec/1.2.2/#flow-collections
_VAR_IN_FLOW_HINT = ("a ${VAR} inside [ ] or { } must be quoted (\"${VAR}\" gives a string), or write that "
                     "mapping or list in block style, where a plain ${VAR} is typed like YAML")
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


def syntax_diag(exc: yaml.YAMLError, text: str, file: str) -> Diagnostic:
    """``yaml-syntax`` from a PyYAML error: its problem text, mark and a hint."""
    problem = str(getattr(exc, "problem", None) or getattr(exc, "reason", None) or exc)
    context = str(getattr(exc, "context", None) or "")
    mark = getattr(exc, "problem_mark", None)
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else offset_mark(exc, text)
    message = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    hint = _TAB_HINT if _tab_at(text, line, column) else _VAR_IN_FLOW_HINT if (
        "flow" in context and _var_at(text, line, column)) else next(
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


def _var_at(text: str, line: int | None, column: int | None) -> bool:
    """Whether a ``${`` ends just before the error (the '{' a flow collection stopped at)."""
    lines = text.splitlines()
    if line is None or column is None or not 0 < line <= len(lines):
        return False
    return lines[line - 1][max(column - 2, 0):column] == "${"


def offset_mark(exc: Exception, text: str) -> tuple[int | None, int | None]:
    """Line and column of a ReaderError or UnicodeEncodeError (they give a character offset only)."""
    offset = getattr(exc, "position", getattr(exc, "start", None))
    if not isinstance(offset, int) or not 0 <= offset <= len(text):
        return None, None
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1
