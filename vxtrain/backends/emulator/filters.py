"""The list filter and paging of ListCustomJobs / ListHyperparameterTuningJobs.

Filters are the AIP-160 subset clients use on jobs (https://google.aip.dev/160):
``labels.K=V``, ``labels.K:*``, ``state=S``, ``state!=S``, ``display_name="x"``
and ``display_name:"x_*"``, joined by AND. (Page tokens: common.encode_cursor.)
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from google.cloud.aiplatform_v1.types.job_state import JobState

from vxtrain.backends.emulator.common import RpcError, unquote

DEFAULT_PAGE_SIZE = 100

_TERM = re.compile(r'\s*(?P<field>[A-Za-z_][\w.\-/]*)\s*(?P<op>!=|=|:)\s*'
                   r'(?P<value>"(?:[^"\\]|\\.)*"|[^\s"]+)\s*')
_AND = re.compile(r"AND\s+")

Predicate = Callable[[Any], bool]


def parse_filter(text: str) -> list[Predicate]:
    """An AIP-160 subset: ``labels.K=V``, ``labels.K:*``, ``state=S``/``state!=S``,
    ``display_name="x"``, ``display_name:"x_*"`` (``*`` a wildcard, as in the
    ListCustomJobsRequest.filter docs), joined by AND (https://google.aip.dev/160)."""
    if not text.strip():
        return []
    return [_predicate(term, text) for term in _terms(text.strip())]


def _terms(text: str) -> Iterator[re.Match[str]]:
    """The comparisons of ``A AND B AND …``, read left to right so that a quoted
    value may hold anything (``AND``, ``OR``, escaped quotes)."""
    pos = 0
    while True:
        term = _TERM.match(text, pos)
        if term is None:
            raise _bad_filter(text)
        yield term
        if term.end() == len(text):
            return
        joiner = _AND.match(text, term.end())
        if joiner is None:  # OR, NOT, parentheses, <, > …: not emulated
            raise _bad_filter(text)
        pos = joiner.end()


def _bad_filter(whole: str) -> RpcError:
    return RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                    f"Invalid filter {whole!r}: the emulator accepts terms like labels.KEY=VALUE, labels.KEY:*, "
                    "state=JOB_STATE_RUNNING, state!=JOB_STATE_FAILED, display_name=\"x\", "
                    "display_name:\"x_*\", joined by AND.")


def _predicate(term: re.Match[str], whole: str) -> Predicate:
    name, op, value = term.group("field"), term.group("op"), unquote(term.group("value"))
    if name.startswith("labels."):
        key = name[len("labels."):]
        return _text_predicate(lambda job: job.labels.get(key), op, value)
    if name == "state":
        return _state_predicate(op, value)
    if name == "display_name":
        return _text_predicate(lambda job: job.display_name, op, value)
    raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                   f"Unsupported filter field {name!r} in {whole!r}: use labels.KEY, state or display_name.")


def _negate(pred: Predicate, negate: bool) -> Predicate:
    return (lambda job: not pred(job)) if negate else pred


def _text_predicate(get: Callable[[Any], str | None], op: str, value: str) -> Predicate:
    """``=``/``!=`` compare exactly; ``:`` matches with ``*`` as a wildcard (``labels.K:*``:
    the label exists). An absent label equals nothing."""
    if op == ":":
        pattern = re.compile(".*".join(re.escape(part) for part in value.split("*")), re.DOTALL)
        return lambda job: (text := get(job)) is not None and pattern.fullmatch(text) is not None
    return _negate(lambda job: get(job) == value, op == "!=")


def _state_predicate(op: str, value: str) -> Predicate:
    if value not in JobState.__members__:
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                       f"Invalid state {value!r} in filter: use a JobState name such as JOB_STATE_RUNNING.")
    state = JobState.__members__[value]
    return _negate(lambda job: job.state == state, op == "!=")

