"""The list filter and paging of ListCustomJobs / ListHyperparameterTuningJobs.

Filters are AIP-160's grammar (https://google.aip.dev/160), which Vertex AI's list
filters follow: comparisons joined by ``AND``, ``OR`` (which binds tighter, as the
grammar says), juxtaposition (an implicit AND), negated by ``NOT`` or ``-``, grouped
with parentheses (vxtrain's own ``list --filter`` wraps the user's filter in them).
The comparisons are those the ListCustomJobsRequest.filter docs name for jobs:
``labels.K=V``, ``labels.K:*``, ``state=S``/``state!=S``, ``display_name="x"``,
``display_name!="x"``, ``display_name:"x_*"`` (``*`` a wildcard) and
``create_time>="2026-11-01T00:00:00Z"`` (any of ``= != < <= > >=``). (Page tokens:
common.encode_cursor.)

A wildcard is matched without backtracking (:func:`wildcard_match`): a regular
expression of ``.*`` runs took minutes on a name of a few hundred characters, while
the emulator's lock was held.
"""
from __future__ import annotations

import operator
import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import grpc
from google.cloud.aiplatform_v1.types.job_state import JobState

from vxtrain.backends.emulator.common import RpcError, unquote
from vxtrain.vocab.timestamps import parse_time

DEFAULT_PAGE_SIZE = 100
#: The deepest nesting of parentheses taken: far past any filter a person writes, and far
#: below Python's recursion limit (each level is a few frames of the parser).
MAX_DEPTH = 32

_COMPARISON = re.compile(r'(?P<field>[A-Za-z_][\w.\-/]*)\s*(?P<op>!=|<=|>=|=|:|<|>)\s*'
                         r'(?P<value>"(?:[^"\\]|\\.)*"|[^\s"()]+)')
_SPACE = re.compile(r"\s*")
_KEYWORDS = ("AND", "OR", "NOT")

Predicate = Callable[[Any], bool]


def parse_filter(text: str) -> Predicate | None:
    """The predicate of an AIP-160 filter over jobs (None: an empty filter, which keeps every job).
    ``*`` in a ``:`` comparison is a wildcard, as in the ListCustomJobsRequest.filter docs."""
    if not text.strip():
        return None
    return _Parser(text).parse()


def wildcard_match(pattern: str, text: str) -> bool:
    """Whether ``text`` matches ``pattern``, where ``*`` stands for any run of characters.

    Linear in ``len(text)`` per part, without backtracking: the first and last parts anchor
    the ends, and each part between is found leftmost after the one before (for ``*`` alone,
    the leftmost place of each part never rules out a match a later place would allow).
    """
    first, *middle = pattern.split("*")
    if not middle:
        return text == pattern
    last = middle.pop()
    if len(text) < len(first) + len(last) or not text.startswith(first) or not text.endswith(last):
        return False
    pos, end = len(first), len(text) - len(last)
    for part in middle:
        found = text.find(part, pos, end)
        if found < 0:
            return False
        pos = found + len(part)
    return True


class _Parser:
    """Recursive descent over AIP-160's grammar, read left to right so that a quoted value may
    hold anything (``AND``, ``OR``, parentheses, escaped quotes)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0

    def parse(self) -> Predicate:
        found = self._expression()
        self._space()
        if self.pos != len(self.text):
            raise self._bad("expected AND, OR or the end")
        return found

    # expression : sequence {WS AND WS sequence}
    def _expression(self) -> Predicate:
        parts = [self._sequence()]
        while self._keyword("AND"):
            parts.append(self._sequence())
        return _all(parts)

    # sequence : factor {WS factor} (an implicit AND)
    def _sequence(self) -> Predicate:
        parts = [self._factor()]
        while not self._at_end_of_sequence():
            parts.append(self._factor())
        return _all(parts)

    # factor : term {WS OR WS term}
    def _factor(self) -> Predicate:
        parts = [self._term()]
        while self._keyword("OR"):
            parts.append(self._term())
        return parts[0] if len(parts) == 1 else (lambda job: any(p(job) for p in parts))

    # term : [(NOT WS | MINUS)] simple
    def _term(self) -> Predicate:
        self._space()
        if self._keyword("NOT") or self._symbol("-"):
            inner = self._simple()
            return lambda job: not inner(job)
        return self._simple()

    # simple : restriction | LPAREN expression RPAREN
    def _simple(self) -> Predicate:
        self._space()
        if not self._symbol("("):
            return self._comparison()
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self._bad(f"parentheses nested deeper than {MAX_DEPTH}")
        inner = self._expression()
        self._space()
        if not self._symbol(")"):
            raise self._bad("expected ')'")
        self.depth -= 1
        return inner

    def _comparison(self) -> Predicate:
        found = _COMPARISON.match(self.text, self.pos)
        if found is None or found.group("field") in _KEYWORDS:
            raise self._bad("expected a comparison such as labels.KEY=VALUE")
        self.pos = found.end()
        return _predicate(found.group("field"), found.group("op"), unquote(found.group("value")), self.text)

    # -- the lexer's part

    def _space(self) -> None:
        self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]  # \s* always matches

    def _symbol(self, symbol: str) -> bool:
        if self.text.startswith(symbol, self.pos):
            self.pos += len(symbol)
            return True
        return False

    def _keyword(self, word: str) -> bool:
        """Consume ``word`` (then whitespace or a parenthesis) when it comes next."""
        start = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
        after = start + len(word)
        if self.text.startswith(word, start) and (after == len(self.text) or self.text[after].isspace()
                                                  or self.text[after] == "("):
            self.pos = after
            return True
        return False

    def _at_end_of_sequence(self) -> bool:
        start = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
        rest = self.text[start:start + 4]
        return start == len(self.text) or rest.startswith(")") or any(
            re.match(rf"{word}(?:\s|\(|$)", rest) for word in ("AND", "OR"))

    def _bad(self, expected: str) -> RpcError:
        return RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                        f"Invalid filter {self.text!r} at character {self.pos + 1}: {expected}. The emulator takes "
                        "AIP-160 filters of labels.KEY=VALUE, labels.KEY:*, state=JOB_STATE_RUNNING, "
                        "state!=JOB_STATE_FAILED, display_name=\"x\", display_name:\"x_*\", create_time>=\"2026-11-01T00:00:00Z\", joined by AND, OR and "
                        "NOT and grouped with parentheses.")


def _all(parts: list[Predicate]) -> Predicate:
    return parts[0] if len(parts) == 1 else (lambda job: all(p(job) for p in parts))


def _predicate(name: str, op: str, value: str, whole: str) -> Predicate:
    if name == "create_time":
        return _time_predicate(op, value)
    if op in ("<", "<=", ">", ">="):
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                       f"Unsupported comparison {name}{op} in {whole!r}: only create_time takes {op}.")
    if name.startswith("labels."):
        key = name[len("labels."):]
        return _text_predicate(lambda job: job.labels.get(key), op, value)
    if name == "state":
        return _state_predicate(op, value)
    if name == "display_name":
        return _text_predicate(lambda job: job.display_name, op, value)
    raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                   f"Unsupported filter field {name!r} in {whole!r}: use labels.KEY, state, display_name "
                   "or create_time.")


def _negate(pred: Predicate, negate: bool) -> Predicate:
    return (lambda job: not pred(job)) if negate else pred


def _text_predicate(get: Callable[[Any], str | None], op: str, value: str) -> Predicate:
    """``=``/``!=`` compare exactly; ``:`` matches with ``*`` as a wildcard (``labels.K:*``:
    the label exists). An absent label equals nothing."""
    if op == ":":
        return lambda job: (text := get(job)) is not None and wildcard_match(value, text)
    return _negate(lambda job: get(job) == value, op == "!=")


def _state_predicate(op: str, value: str) -> Predicate:
    if value not in JobState.__members__:
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                       f"Invalid state {value!r} in filter: use a JobState name such as JOB_STATE_RUNNING.")
    state = JobState.__members__[value]
    return _negate(lambda job: job.state == state, op == "!=")


#: The comparisons of a time (``create_time``), each as its operator: "create_time supports =, !=,
#: <, <=, >, >= comparisons. create_time must be in RFC 3339 format." (ListCustomJobsRequest.filter,
#: https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.customJobs/list)
_ORDERS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _time_predicate(op: str, value: str) -> Predicate:
    """``create_time OP "RFC 3339"``: the job's create time against the given one (``:`` is refused)."""
    compare = _ORDERS.get(op)
    try:
        when = parse_time(value)
    except ValueError:
        compare = None
    if compare is None:
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                       f"Invalid create_time comparison {op}{value!r}: use =, !=, <, <=, > or >= and an "
                       "RFC 3339 time such as \"2026-11-01T00:00:00Z\".")
    return lambda job: compare(_created(job), when)


def _created(job: Any) -> datetime:
    """The stored job's create time, an aware UTC datetime (proto-plus gives a naive or aware one)."""
    stamp: datetime = job.create_time
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=timezone.utc)
