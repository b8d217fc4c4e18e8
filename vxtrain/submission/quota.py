"""The quota preflight: what a job needs of each training quota, against the project's limits.

The needs come from vxtrain.planning.quota (per metric, all pools at once); the
limits from the Cloud Quotas API (``ListQuotaInfos`` under
``projects/P/locations/global/services/aiplatform.googleapis.com``, through the
backend: https://cloud.google.com/docs/quotas/reference/rest/v1/projects.locations.services.quotaInfos/list).
The API gives limits only, no usage, and the service decides at create: the
preflight can say that a job cannot fit (its own need is above a limit), never
that it will start (docs/capacity.md).

* :func:`preflight`: the :class:`QuotaReport` of one job in one region; a read
  that is refused (permission, API disabled, not served) or keeps failing is
  reported (the session's logger) and leaves every limit unknown;
* :func:`check_quota`: the preflight, raising ``errors.NoCapacity`` (exit 5)
  when a need is above a limit; ``submit`` calls it before anything is created
  or uploaded, and a fallback ladder can call it once per rung.

A need whose metric no catalog row names but a documented pattern gives
(``Need.candidate``: the preemptible twin of a known GPU metric, an N4/M1/A2/A3
CPU metric) is counted against that name only when the project's own answer
lists it with an entry for the job's region; its row then says so (``source``
``ListQuotaInfos``). A name the answer does not list stays unknown.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from vxtrain import catalog, errors
from vxtrain.backends.base import JobBackend, JobDict, QuotaInfoDict
from vxtrain.planning.quota import PREEMPTIBLE_STRATEGIES, Need, needs, strategy_of
from vxtrain.submission.retry import LOCAL_RETRY, Backoff, retrying
from vxtrain.submission.session import Session

# Annotations only: a TypedDict class costs ~15 µs a field to create (measured).
if TYPE_CHECKING:
    class QuotaRowJson(TypedDict):
        """One entry of ``quotas`` (the Contract's, ``resource`` added)."""

        metric: str | None
        quota_id: str | None
        needed: int | None
        limit: int | None
        fits: bool | None
        resource: str
        source: NotRequired[str]


    class QuotaReportJson(TypedDict):
        """``vxtrain quota``'s document, and a NoCapacity's ``report`` (docs/cli.md)."""

        project: str
        region: str
        fits: bool
        quotas: list[QuotaRowJson]
        unreadable: NotRequired[str]
        fallback: NotRequired[list[QuotaRungJson]]


    class QuotaRungJson(QuotaReportJson):
        """The report of one ``fallback:`` rung (``rung``: 1 first)."""

        rung: int


#: Reading limits on Google: a short, bounded retry (the limit is advice, the submit goes on without it).
QUOTA_READ_RETRY = Backoff(initial=1.0, maximum=8.0, deadline=30.0, unresolved=10.0)
_QUOTAS_HELP = "https://cloud.google.com/vertex-ai/docs/quotas"
#: A row's ``source`` when its metric name is a pattern's, confirmed by the project's own answer.
FROM_QUOTA_INFOS = "ListQuotaInfos"


@dataclass(frozen=True)
class QuotaRow:
    """One need set against its limit; ``limit`` None: unknown (no metric, no entry, or unreadable)."""

    resource: str
    metric: str | None
    quota_id: str | None
    needed: int | None
    limit: int | None
    #: The indexes in workerPoolSpecs that need it.
    pools: tuple[int, ...] = ()
    #: Where the metric's name came from when no catalog row names it: ``ListQuotaInfos``
    #: (a documented pattern's name, listed by the project's own answer); None: the catalog.
    source: str | None = None

    @property
    def fits(self) -> bool | None:
        """False when the need is above the limit; None when either is unknown (or the limit
        is negative, which some tools read as unlimited: not documented for QuotaInfo)."""
        if self.needed is None or self.limit is None or self.limit < 0:
            return None
        return self.needed <= self.limit

    def to_json(self) -> QuotaRowJson:
        """The Contract's quota entry (``resource`` added: what is counted; ``source`` only
        where the metric's name came from the project's ListQuotaInfos answer)."""
        doc: QuotaRowJson = {"metric": self.metric, "quota_id": self.quota_id, "needed": self.needed,
                             "limit": self.limit, "fits": self.fits, "resource": self.resource}
        if self.source is not None:
            doc["source"] = self.source
        return doc


@dataclass(frozen=True)
class QuotaReport:
    """A job's needs against the limits of ``project`` in ``region``.

    ``unreadable``: why the limits could not be read (then every limit is None).
    ``fallback``: the report of each rung of the spec's ``fallback:`` (rung 1 first);
    ``fits`` and ``short`` are the spec's own (rung 0), as the exit code is.
    """

    project: str
    region: str
    rows: list[QuotaRow] = field(default_factory=list)
    unreadable: str | None = None
    fallback: tuple[QuotaReport, ...] = ()
    #: The job's scheduling.strategy (SPOT and FLEX_START already use the preemptible quotas).
    strategy: str = ""

    @property
    def fits(self) -> bool:
        """True unless a need is known to be above its limit."""
        return not self.short

    @property
    def short(self) -> list[QuotaRow]:
        """The rows whose need is above the limit."""
        return [row for row in self.rows if row.fits is False]

    def to_json(self) -> QuotaReportJson:
        """``{"project", "region", "fits", "quotas": [...]}`` (``unreadable`` when the read failed;
        ``fallback``: ``[{"rung", "project", "region", "fits", "quotas"}]`` for a ladder)."""
        doc: QuotaReportJson = {"project": self.project, "region": self.region, "fits": self.fits,
                                "quotas": [row.to_json() for row in self.rows]}
        if self.unreadable is not None:
            doc["unreadable"] = self.unreadable
        if self.fallback:
            doc["fallback"] = [{"rung": number, **rung.to_json()} for number, rung in enumerate(self.fallback, 1)]
        return doc

    def message(self) -> str:
        """What is short and what to do, for NoCapacity."""
        what = "; ".join(f"{row.metric} needs {row.needed} ({', '.join(f'workerPoolSpecs[{i}]' for i in row.pools)}), "
                         f"the limit is {row.limit}" for row in self.short)
        spot = "" if self.strategy in PREEMPTIBLE_STRATEGIES else \
            ", or scheduling.strategy SPOT or FLEX_START (they count against the preemptible quotas)"
        return (f"quota too small for this job in {self.region} (project {self.project}): {what}. "
                f"Ask for more quota ({_QUOTAS_HELP}), use another region{spot}")


def quota_parent(project: str, service: str = catalog.QUOTA_SERVICE) -> str:
    """``projects/P/locations/global/services/S``: Cloud Quotas keeps every quota under ``global``."""
    return f"projects/{project}/locations/global/services/{service}"


def limit_in(info: Mapping[str, Any], region: str) -> int | None:
    """The limit a QuotaInfo (REST JSON) sets in ``region``: the entry for that region wins;
    an entry without a region key "applies to all the dimension values except for those
    that have another DimensionInfo" (DimensionsInfo, google/api/cloudquotas/v1/resources.proto).
    A ``details`` without ``value`` is 0 (proto3 leaves a zero out). None: no entry applies."""
    general: int | None = None
    for entry in info.get("dimensionsInfos") or ():
        dimensions = entry.get("dimensions") or {}
        value = int((entry.get("details") or {}).get("value") or 0)
        if dimensions.get("region") == region:
            return value
        if "region" not in dimensions and general is None:
            general = value
    return general


def report(found: Sequence[Need], infos: Iterable[QuotaInfoDict], *, project: str, region: str,
           unreadable: str | None = None) -> QuotaReport:
    """The needs set against the QuotaInfos that name their metrics (pure). A need with no
    metric but a ``candidate`` takes that name when a QuotaInfo lists it with an entry for
    ``region`` (:func:`confirmed`); otherwise it stays unknown."""
    by_metric = _by_metric(infos)
    rows = []
    for need in found:
        metric, source = need.metric, None
        if metric is None and confirmed(need, by_metric, region):
            metric, source = need.candidate, FROM_QUOTA_INFOS
        info = by_metric.get(metric or "")
        limit = limit_in(info, region) if info is not None else None
        quota_id = str(info.get("quotaId")) if info is not None and info.get("quotaId") else need.quota_id
        rows.append(QuotaRow(need.resource, metric, quota_id, need.needed, limit, need.pools, source))
    return QuotaReport(project, region, rows, unreadable)


def confirmed(need: Need, by_metric: Mapping[str, QuotaInfoDict], region: str) -> bool:
    """Whether the project's answer confirms ``need``'s pattern name: a QuotaInfo on that
    metric with an entry that applies in ``region``. A name it does not list is no fact."""
    info = by_metric.get(need.candidate or "")
    return info is not None and limit_in(info, region) is not None


def _by_metric(infos: Iterable[QuotaInfoDict]) -> dict[str, QuotaInfoDict]:
    """QuotaInfos by metric; of several quotas on one metric, the first kept per region
    (``dimensions`` has ``region``) wins: a job's need is checked in its region."""
    out: dict[str, QuotaInfoDict] = {}
    for info in infos:
        metric = str(info.get("metric"))
        regional = "region" in (info.get("dimensions") or ())
        if metric not in out or (regional and "region" not in (out[metric].get("dimensions") or ())):
            out[metric] = info
    return out


#: What one read of a project's limits gave: its QuotaInfos, or why it failed.
Read = list[QuotaInfoDict] | str


def preflight(session: Session, job: JobDict, *, project: str, region: str,
              reads: dict[str, Read] | None = None) -> QuotaReport:
    """The QuotaReport of the compiled ``job`` (CustomJob or HyperparameterTuningJob REST JSON)
    in ``project``/``region``. Never raises for an API error: a refused or failing read is
    said (the session's logger) and leaves the limits unknown, since the service decides anyway.
    ``reads``: the reads already made, by parent (the limits are global to a project: the
    rungs of a ladder share one read, and a failing one is not retried for each)."""
    found = needs(job)
    if not any(need.metric or need.candidate for need in found):
        return report(found, [], project=project, region=region)  # nothing the API could answer for
    parent = quota_parent(project)
    reads = {} if reads is None else reads
    if parent not in reads:
        reads[parent] = _read(session, session.api(region), parent)
    read = reads[parent]
    if isinstance(read, str):
        found_report = report(found, [], project=project, region=region, unreadable=read)
    else:
        found_report = report(found, read, project=project, region=region)
    return replace(found_report, strategy=strategy_of(job))


def _read(session: Session, backend: JobBackend, parent: str) -> Read:
    """Every QuotaInfo under ``parent``, or (said as a warning) why they could not be read."""
    retry = LOCAL_RETRY if session.emulated else QUOTA_READ_RETRY
    try:
        return list(retrying(lambda: backend.list_quota_infos(parent), retry, f"list quota infos of {parent}",
                             session.log))
    except errors.ApiError as exc:
        session.log.warning("warning: could not read the quota limits, so they are not checked: %s", exc)
        return str(exc)


def check_quota(session: Session, job: JobDict, *, project: str, region: str,
                reads: dict[str, Read] | None = None) -> QuotaReport:
    """:func:`preflight`, raising ``errors.NoCapacity`` (exit 5) when a need is above a limit."""
    found = preflight(session, job, project=project, region=region, reads=reads)
    if not found.fits:
        raise errors.NoCapacity(f"{found.message()}; nothing was created (--no-quota-check skips "
                                f"this check: the limits are advice, the service decides)", found)
    return found
