"""Rules for ``recovery:`` and ``notify:`` (README "Recovery"): what the schema cannot
see because it spans keys.

* ``spot_to_standard_after`` counts preemptions of Spot VMs: without
  ``scheduling.strategy: SPOT`` (as compiled) there are none to count (a warning: it
  does nothing).
* ``spot_to_standard_after`` above ``max_recoveries`` is never reached (a warning).
* ``strategy: next`` goes on down ``fallback:``; without one there is no next rung, so
  the first machines lost end the submit (a warning).
* Without ``base_output_dir`` a new attempt has no ``AIP_CHECKPOINT_DIR`` (Vertex AI
  sets it from ``baseOutputDirectory``:
  https://cloud.google.com/vertex-ai/docs/training/code-requirements#environment-variables),
  so it starts from nothing unless the trainer keeps its checkpoints elsewhere (a warning).
* A ``notify:`` URL needs an http(s) scheme and a host (the schema checks the scheme and
  that something follows it; urllib says whether that is a host: ``https://:443`` is not).
"""
from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.loading.document import NativeSpec
from vxtrain.loading.fallback import FALLBACK_KEY
from vxtrain.model import Job, Recovery
from vxtrain.validation._common import scheduling_value

#: Where AIP_CHECKPOINT_DIR comes from (baseOutputDirectory/checkpoints/).
CHECKPOINT_DOC = "https://cloud.google.com/vertex-ai/docs/training/code-requirements#environment-variables"


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Every recovery and notify diagnostic of ``job``."""
    yield from _notify(native)
    recovery = job.recovery
    if recovery is None:
        return
    yield from _spot_to_standard(job, recovery, native)
    if recovery.strategy == "next" and not _has_fallback(native):
        yield warning("recovery-next-without-fallback", "recovery.strategy: next goes on down the fallback: "
                      "ladder after machines are lost, and this spec has no fallback:, so the first loss ends "
                      "the submit (exit 5 after a capacity loss, 3 otherwise): use strategy: same, or add "
                      "fallback: entries",
                      **native.where(("recovery", "strategy")))
    if job.base_output_dir is None:
        yield warning("recovery-without-output-dir", "recovery: each attempt is a new job, and without "
                      "base_output_dir it has no AIP_CHECKPOINT_DIR to resume from, so it starts from nothing "
                      f"unless the trainer keeps its own checkpoints: set base_output_dir: gs://BUCKET/PATH "
                      f"({CHECKPOINT_DOC})", **native.where(("recovery",)))


def _spot_to_standard(job: Job, recovery: Recovery, native: NativeSpec) -> Iterator[Diagnostic]:
    after = recovery.spot_to_standard_after
    if after is None:
        return
    strategy, _ = scheduling_value(job, "strategy")
    where = native.where(("recovery", "spot_to_standard_after"))
    if str(strategy or "").upper() != "SPOT":
        yield warning("spot-to-standard-not-spot", f"recovery.spot_to_standard_after: {after} counts "
                      f"preemptions of Spot VMs, and the job's scheduling.strategy is {strategy or 'STANDARD'}: "
                      "it does nothing; remove it, or set scheduling.strategy: SPOT", **where)
    elif after > recovery.max_recoveries:
        yield warning("spot-to-standard-unreached", f"recovery.spot_to_standard_after: {after} is more than "
                      f"max_recoveries: {recovery.max_recoveries}, so the job never moves to STANDARD VMs: "
                      f"give at most {recovery.max_recoveries}", **where)


def _has_fallback(native: NativeSpec) -> bool:
    """Whether the document has ``fallback:`` (a rung's own spec has none; its source does)."""
    source = native.source.data
    return isinstance(source, dict) and bool(source.get(FALLBACK_KEY))


def _notify(native: NativeSpec) -> Iterator[Diagnostic]:
    raw = native.data.get("notify")
    if not isinstance(raw, list):
        return
    for index, url in enumerate(raw):
        if not isinstance(url, str):
            continue  # the schema's to report
        parts = urlsplit(url)
        if parts.scheme in ("http", "https") and parts.netloc and not parts.hostname:  # e.g. https://:443
            yield error("notify-url", f"notify: {url!r} has no host: give a URL such as "
                        "https://hooks.slack.com/services/T000/B000/XXXX", **native.where(("notify", index)))
