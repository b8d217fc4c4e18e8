"""Job labels: count, keys and values per the Google Cloud label requirements (LABELS_DOC)."""
from __future__ import annotations

import re
from collections.abc import Iterator

from vxtrain.diagnostics import Diagnostic, error
from vxtrain.loading import fallback
from vxtrain.loading.document import KeyPath, NativeSpec
from vxtrain.model import ATTEMPT_LABEL, IDEMPOTENCY_LABEL, RUNG_LABEL, TRACE_LABEL, Job
from vxtrain.validation._common import quote_list

LABELS_DOC = "https://cloud.google.com/resource-manager/docs/labels-overview#requirements"

#: Label requirements: ≤ 64 labels per resource, keys/values ≤ 63 characters of
#: lowercase letters, digits, '-' and '_' (international letters allowed), keys
#: start with a lowercase letter (LABELS_DOC). ``submit`` adds labels of its
#: own (the idempotency key; in a ``fallback:`` ladder, the rung number too), so a
#: spec may carry that many fewer.
MAX_LABELS = 64
MAX_LABEL_CHARS = 63
#: The labels submit sets, and what sets each.
_RESERVED = {IDEMPOTENCY_LABEL: "--idempotency-key KEY", RUNG_LABEL: "the fallback rung",
             ATTEMPT_LABEL: "the recovery attempt", TRACE_LABEL: "the TRACEPARENT trace id"}


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Label count, keys and values per the Google Cloud label requirements."""
    added = _added_on_submit(native)
    if len(job.labels) > MAX_LABELS - added:
        what = {1: "one", 2: "two (the idempotency key and the fallback rung or the attempt)"}.get(
            added, "three (the idempotency key, the fallback rung and the attempt)")
        yield error("too-many-labels", f"{len(job.labels)} labels; a job may have {MAX_LABELS} and vxtrain "
                    f"adds {what} on submit, so give at most {MAX_LABELS - added}", **native.where(("labels",)))
    for key, value in job.labels.items():
        path: KeyPath = ("labels", key) if key else ("labels",)
        if key in _RESERVED:
            yield error("reserved-label", f'label "{key}" is the one vxtrain sets on submit '
                        f'({_RESERVED[key]}); '
                        "a value given here would be overwritten: remove it", **native.where(path))
            continue
        problem = _label_problem(key, is_key=True)
        if problem:
            yield error("bad-label-key", f'label key "{key}" {problem} ({LABELS_DOC})', **native.where(path))
        problem = _label_problem(value, is_key=False)
        if problem:
            yield error("bad-label-value", f'label value "{value}" of "{key}" {problem} ({LABELS_DOC})',
                        **native.where(path))


def _added_on_submit(native: NativeSpec) -> int:
    """How many labels submit adds: the idempotency key, and the rung's number when the
    document has a ``fallback:`` list (a rung's own spec has none: the source says so)."""
    source = native.source.data
    if not isinstance(source, dict):
        return 1
    return 1 + bool(source.get(fallback.FALLBACK_KEY)) + bool(source.get("recovery"))


def _label_problem(text: str, *, is_key: bool) -> str | None:
    """What is wrong with a label key or value, or None."""
    if is_key and not text:
        return "is empty; keys need 1 to 63 characters"
    if len(text) > MAX_LABEL_CHARS:
        return f"has {len(text)} characters; at most {MAX_LABEL_CHARS} are allowed"
    # The common all-ASCII case in one regex; others (international letters are
    # allowed) character by character.
    bad = [] if _ASCII_LABEL.fullmatch(text) else sorted({c for c in text if not _label_char(c)})
    if bad:
        return (f"contains {quote_list(bad)}; only lowercase letters, digits, '-' and '_' are allowed")
    if is_key and not (text[0].isalpha() and text[0] == text[0].lower()):
        return "must start with a lowercase letter"
    return None


_ASCII_LABEL = re.compile(r"[a-z0-9_-]*")


def _label_char(c: str) -> bool:
    return c in "-_" or (c.isalnum() and c == c.lower())
