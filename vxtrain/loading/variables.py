"""``${NAME}`` / ``${NAME:-default}`` substitution in string values.

References are substituted in string *values* (never keys) from ``variables``
first, then ``environ``. As in the shell, ``:-`` also applies when the
variable is set but empty. ``$${`` is a literal ``${``; defaults cannot nest
references. An unquoted scalar that is exactly one reference is re-typed by
YAML rules by the event builder (``replicas: ${N}`` with ``N=4`` is the int 4;
``${X:-}`` is null); anything else stays a string.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

_REF = re.compile(r"\$(?:\$\{|\{(?P<body>[^}]*)(?P<close>\}?))")
_REF_BODY = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?\Z", re.S)
_REF_HELP = ("write ${NAME} or ${NAME:-default} (NAME: letters, digits and _, not starting "
             "with a digit), or $${ for a literal ${")
#: The ``variable-limit`` message; ``limit`` is a number of characters.
VARIABLE_LIMIT = ("${{NAME}} references expand the document past {limit:,} characters; a spec needs far "
                  "fewer: reference long values fewer times")
_MAX_PROBLEMS_PER_SCALAR = 20


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
            return text, [("variable-limit", VARIABLE_LIMIT.format(limit=limit))], False
    out.append(text[last:])
    if limit is not None and size + len(text) - last > limit:
        return text, [("variable-limit", VARIABLE_LIMIT.format(limit=limit))], False
    return "".join(out), list(problems), whole and not problems


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
