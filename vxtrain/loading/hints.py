"""YAML syntax errors → one located ``yaml-syntax`` diagnostic with a hint.

PyYAML's messages name the parser's state ("while scanning a quoted
scalar"); the hint says what the user most likely got wrong.
"""
from __future__ import annotations

import re

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
    """``yaml-syntax`` from a PyYAML error: its problem text, mark and a hint.

    Where the parser stops is often a line after the slip (a key with no space after its
    ':' reads as a string that runs on to the next line; an unclosed quote runs to the end
    of the file): ``_slip`` names the slip at its own line when it can tell which it is.
    """
    problem = str(getattr(exc, "problem", None) or getattr(exc, "reason", None) or exc)
    context = str(getattr(exc, "context", None) or "")
    mark = getattr(exc, "problem_mark", None)
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else offset_mark(exc, text)
    message = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    slip = _slip(exc, problem, context, text, line, column)
    if slip is not None:
        line, column, said, hint = slip
        message = f"invalid YAML: {said}"
    else:
        hint = _TAB_HINT if _tab_at(text, line, column) else _VAR_IN_FLOW_HINT if (
            "flow" in context and _var_at(text, line, column)) else next(
            (h for p, c, h in _HINTS if p in problem and c in context), "")
    return error("yaml-syntax", message + (f"; hint: {hint}" if hint else ""),
                 file=file, line=line, column=column)


#: A line that starts with a key glued to its value: ``machine_type:n1-standard-8`` (a list
#: item's too). The key is a plain word; what follows the ':' is neither a space, a '/' (a URL
#: such as ``gs://b`` is a value, not a slip) nor another ':'.
_GLUED = re.compile(r"^(\s*(?:-\s+)?)[A-Za-z_][\w.-]*(:)[^\s/:]")
_NO_SPACE_HINT = "add a space after ':' (`key: value`): without it, YAML reads the whole line as one string"
_INDENT_HINT = "line it up with the keys above it (or, to nest it under the line above, end that line with ':')"


#: (line, column, what is wrong, hint) of a slip.
_Slip = tuple[int, int, str, str]


def _slip(exc: yaml.YAMLError, problem: str, context: str, text: str, line: int | None,
          column: int | None) -> _Slip | None:
    """Where and what the slip behind a parser error found after it is, with its hint: an
    unclosed quote (where it opened), a key with no space after its ':', a key indented too far."""
    opened = getattr(exc, "context_mark", None)
    lines = text.splitlines()
    if "end of stream" in problem and "quoted scalar" in context and opened is not None:
        quote = lines[opened.line][opened.column:opened.column + 1] if opened.line < len(lines) else '"'
        return (opened.line + 1, opened.column + 1, f"the string this {quote} opens is never closed (the "
                "parser reached the end of the file)", f"add the closing {quote} where the string ends")
    if "could not find expected ':'" in problem and "simple key" in context and opened is not None:
        return _glued(lines, opened.line + 1)
    if "mapping values are not allowed" in problem and line is not None and column is not None:
        return _run_on(lines, line, column)
    if "did not find expected key" in problem and line is not None:  # a comment line ended the value above
        above = _content_line_before(lines, line)
        return None if above is None else _deeper(lines, line, above)
    return None


def _glued(lines: list[str], line: int) -> _Slip | None:
    """Line ``line`` as a key glued to its value, at its ':'; None when it is not one."""
    found = _GLUED.match(lines[line - 1]) if 0 < line <= len(lines) else None
    if found is None:
        return None
    written = _shown(lines[line - 1].strip())
    return line, found.start(2) + 1, f"no space after the ':' in `{written}`", _NO_SPACE_HINT


def _run_on(lines: list[str], line: int, column: int) -> _Slip | None:
    """A ':' the parser refused at the first key of its line: that line was read as more of the
    value above it. Either that value is a key glued to its own (no space after its ':'), or
    this key is indented deeper than the one above it, which has a value."""
    here = lines[line - 1] if 0 < line <= len(lines) else ""
    if ": " in here[:column - 1] or ":\t" in here[:column - 1]:
        return None  # a ': ' earlier on the same line: the value itself holds ': ' (quote it)
    above = _content_line_before(lines, line)
    if above is None:
        return None
    return _glued(lines, above) or _deeper(lines, line, above)


def _deeper(lines: list[str], line: int, above: int) -> _Slip | None:
    """Line ``line`` as a key indented deeper than line ``above``, which has a value; None when it is not."""
    if not 0 < above < line <= len(lines):
        return None
    here, before = lines[line - 1], lines[above - 1]
    indent = len(here) - len(here.lstrip(" "))
    if ":" not in here or indent <= len(before) - len(before.lstrip(" ")) or before.rstrip().endswith(":"):
        return None
    key = _shown(here.strip().split(":", 1)[0])
    return (line, indent + 1, f"this key (`{key}`) is indented more than the keys above it (line {above} "
            "has a value, so nothing can nest under it)", _INDENT_HINT)


def _shown(text: str) -> str:
    """``text`` as a message quotes it: at most 40 characters."""
    return text if len(text) <= 40 else text[:37] + "..."


def _content_line_before(lines: list[str], line: int) -> int | None:
    """The number of the last line before ``line`` that holds more than a comment."""
    for number in range(line - 1, 0, -1):
        stripped = lines[number - 1].strip()
        if stripped and not stripped.startswith("#"):
            return number
    return None


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
