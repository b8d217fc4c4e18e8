"""The check pipeline: load → detect → normalize → validate → plan → compile, for one spec.

``check_file`` and ``check_document`` run it and never raise for bad input: what is
wrong comes back as diagnostics in a ``Result``, beside what each stage made (the
document, the typed model, the bandwidth and cost plans, the compiled jobs, and the
packages and images a submit would publish). ``load_job`` is the same, raising
SpecError when the spec is not valid.

Each stage returns new values: the model the rules checked is the one ``Result.job``
started from, and resolving (the Reduction Server's size, package URIs, image URIs)
makes a new model rather than changing it. Nothing here imports google.*: ``validate``
and ``plan`` stay fast (scripts/bench.py).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vxtrain import compiler, formats, model, settings
from vxtrain import diagnostics as dx
from vxtrain.diagnostics import Diagnostic
from vxtrain.errors import SpecError
from vxtrain.formats import package_flags
from vxtrain.loading import load as load_document
from vxtrain.loading.document import Document, KeyPath, NativeSpec, Position, format_path
from vxtrain.loading.fallback import FALLBACK_KEY, Rung, entries, equal, rungs
from vxtrain.loading.limits import MAX_ERRORS, MAX_RUNGS
from vxtrain.options import Options
from vxtrain.planning import bandwidth
from vxtrain.settings import Setting
from vxtrain.validation import container_rules, label_rules, rules, schema

if TYPE_CHECKING:
    from vxtrain.images.recipe import ImageBuild
    from vxtrain.packaging.sdists import Package
    from vxtrain.sources.folder import Source
    from vxtrain.planning.cost import Cost

@dataclass
class Result:
    """Everything known about one spec file after the pipeline ran."""

    file: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    document: Document | None = None
    native: NativeSpec | None = None
    #: The typed model (after compile: with the Reduction Server sized and URIs resolved).
    job: model.Job | None = None
    plan: bandwidth.Plan | None = None
    #: The cost plan, when Options.cost or max_hourly_cost asked for it.
    cost: Cost | None = None
    #: The spec as sent (formats.gcloud.as_sent: extra's fields on their native keys), what
    #: the rules and the plans read; ``native`` itself without such fields.
    sent: NativeSpec | None = None
    custom_job: dict[str, Any] | None = None
    hyperparameter_tuning_job: dict[str, Any] | None = None
    strict: bool = False
    #: python_package.source folders and their URIs.
    packages: list[Package] = field(default_factory=list)
    #: The rungs of ``fallback:`` (1, 2, ...), each a Result of its own whole spec;
    #: their diagnostics are also in this one's (see ``_check_rungs``). A rung that is the
    #: same job as one before it shares that one's model, plans and compiled job.
    fallback: list[Result] = field(default_factory=list)
    #: build: images and their URIs.
    images: list[ImageBuild] = field(default_factory=list)
    #: Where the project and region came from ("project"/"region" → Setting; absent: not set).
    settings: dict[str, Setting] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        """No errors (and, under --strict, no warnings)."""
        return not dx.has_errors(self.diagnostics, self.strict)

    def raise_for_errors(self) -> None:
        """Raise SpecError with the diagnostics when the spec is not valid."""
        if not self.valid:
            raise SpecError(self.diagnostics)

    def slim(self) -> Result:
        """Only the file and its diagnostics (what a bulk validate keeps of each file)."""
        return Result(file=self.file, diagnostics=self.diagnostics, strict=self.strict)


def _apply_overrides(native: NativeSpec, options: Options, environ: Mapping[str, str]) -> dict[str, Setting]:
    """Flags beat the spec, the spec beats the environment (docs/spec.md, "Keys"); project
    and region then come from gcloud's settings (vxtrain.settings). A value that came from
    a flag, a variable or gcloud's configuration file is located there, so a bad one is
    reported at ``--region`` (say) or the file's line, not at a line of the spec that it
    replaced. Returns the project's and region's settings, for ``plan`` to say where each
    came from."""
    used: dict[str, Setting] = {}
    given: list[tuple[str, Setting | None]] = [
        (key, Setting(getattr(options, key), flag, flag) if getattr(options, key) else None)
        for key, flag in (("display_name", "--display-name"), ("staging_bucket", "--staging-bucket"),
                          ("image_repository", "--image-repository"))]
    resolved = settings.resolve_both({key: getattr(options, key) for key in settings.KEYS}, native.data, environ)
    for key, found in resolved.items():
        if found is not None:
            used[key] = found
        given.append((key, found))
    for name, value in given:
        if value is not None and value.source != settings.SPEC:
            native.data[name] = value.value
            native.source.positions[native.source_path((name,))] = Position(value.file, value.line, value.column)
    return used


def _load(path: str | Path, options: Options) -> tuple[Document | None, list[Diagnostic]]:
    environ = os.environ if options.environ is None else options.environ
    return load_document(path, overlays=options.overlays, sets=options.sets,
                         variables=options.variables, environ=environ)


def check_file(path: str | Path, options: Options | None = None, *, compile_job: bool = True) -> Result:
    """Run the whole pipeline on one file; never raises for bad input."""
    options = options or Options()
    document, diags = _load(path, options)
    result = Result(file=str(path), diagnostics=diags, document=document, strict=options.strict)
    if document is None:
        return _finish(result)
    return check_document(document, options, result, compile_job=compile_job)


def check_document(document: Document, options: Options | None = None, result: Result | None = None,
                   *, compile_job: bool = True) -> Result:
    """The pipeline from a loaded document on (normalize, validate, plan, compile)."""
    options = options or Options()
    environ = os.environ if options.environ is None else options.environ
    result = result or Result(file=document.file, document=document, strict=options.strict)
    stem = Path(document.file).stem
    package = package_flags.from_flags(document, options.package_path, options.module_name)
    native, diags = formats.to_native(document, display_name=options.display_name or stem, package=package)
    result.diagnostics += diags
    result.native = native
    if native is None:
        return _finish(result)
    result.settings = _apply_overrides(native, options, environ)
    described: dict[Path, Source] = {}  # source folders hashed (the rungs share the spec's)
    _check_native(native, options, result, described, compile_job=compile_job)
    _check_rungs(native, options, result, described, compile_job=compile_job)
    return _finish(result)


def _check_native(native: NativeSpec, options: Options, result: Result, described: dict[Path, Source], *,
                  compile_job: bool, written: frozenset[KeyPath] | None = None) -> None:
    """Validate, plan and (when valid) compile one whole spec into ``result`` (``described``:
    the source folders hashed so far in this check). ``written``: for a rung, the key paths
    its entry wrote (the costly rules that none of them concerns are not run again)."""
    result.diagnostics += schema.check(native)
    # The rules and the plans read the job as sent: extra's fields on their native keys,
    # located at the extra lines that set them (the schema checked the spec as written;
    # extra.py checks extra's own values).
    sent = native
    extra = native.data.get("extra")
    if isinstance(extra, dict) and isinstance(extra.get("jobSpec"), dict):
        from vxtrain.formats import gcloud  # lazy: +6 ms on validate's path, for specs with extra.jobSpec alone

        sent = gcloud.as_sent(native)
    result.sent = sent
    job = model.build(sent.data)
    result.job = job
    checked = rules.check(job, sent) if written is None else _rules_for(job, sent, written)
    result.diagnostics += checked if sent is native else _once(checked + _sent_schema(sent))
    result.diagnostics = _without_consequences(result.diagnostics)
    planned = bandwidth.plan(job, sent, gradient_bytes=options.gradient_size)
    result.plan = planned
    result.diagnostics += planned.diagnostics
    if compile_job and not dx.has_errors(result.diagnostics):
        _compile(result, described)
        _price(result, options)


def _sets_env(path: KeyPath) -> bool:
    """Whether writing ``path`` can change an env variable of some pool: the variables of a
    pool or of ``defaults``, a whole pool or ``defaults`` (set, replaced or deleted), or ``extra:``."""
    return path[0] == "extra" or (path[0] in _POOL_KEYS and (len(path) == 1 or path[1] == "env"))


def _sets_labels(path: KeyPath) -> bool:
    """Whether writing ``path`` can change the job's labels (``labels:`` or ``extra:``)."""
    return path[0] in ("labels", "extra")


#: The costly rules (each runs once per item of a list the user sizes: every env variable of
#: every pool, every label), with what a rung's entry must write for them to find anything new.
#: On a rung that writes none of it, their findings are rung 0's, which ``_check_rungs`` drops
#: as said already, so they are not run again (300 rungs over 2,000 variables spent 5 of 6.6 s
#: there). The other rules cost a few lookups per pool and run on every rung: a rule missing
#: here is only slower, never silent.
_POOL_KEYS = frozenset({"chief", "workers", "parameter_servers", "reduction_server", "evaluators", "defaults"})
_READS: dict[rules.Rule, Callable[[KeyPath], bool]] = {
    container_rules.env_rules: _sets_env,
    label_rules.check: _sets_labels,
}


def _rules_for(job: model.Job, sent: NativeSpec, written: frozenset[KeyPath]) -> list[Diagnostic]:
    """``rules.check`` on a rung, without the costly rules that nothing ``written`` concerns."""
    out: list[Diagnostic] = []
    for rule in rules.RULES:
        concerns = _READS.get(rule)
        if concerns is None or any(map(concerns, written)):
            out += rule(job, sent)
    return list(dict.fromkeys(out))  # as rules.check: a mistake in defaults, once


#: The errors a misspelt key leaves behind, by code: the key (or keys, any of which would do)
#: whose absence it reports. `workers: {machine_typ: …}` is an unknown key *and* a pool with no
#: machine type; the second is only the first seen again, and fixing the first fixes both.
_MISSING_KEY_CODES: dict[str, tuple[str, ...]] = {
    "missing-machine-type": ("machine_type",),
    "missing-image": ("image", "python_package", "build"),
    "missing-accelerator": ("accelerator",),
    "missing-chief": ("chief",),
}


def _without_consequences(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """``diagnostics`` without the errors that only repeat a misspelt key: a key missing from the
    mapping where an unknown key's did-you-mean names it (or from any pool, when the misspelt
    key is in ``defaults``); the unknown key's error says it all."""
    typos = {(d.path.rpartition(".")[0] if "." in d.path else "", guess)
             for d in diagnostics if (guess := schema.meant(d)) is not None}
    if not typos:
        return diagnostics
    return [d for d in diagnostics if not any(_consequence(d, parent, guess) for parent, guess in typos)]


def _consequence(d: Diagnostic, parent: str, guess: str) -> bool:
    """Whether ``d`` reports as missing the key ``guess`` that a key misspelt in ``parent`` meant."""
    if d.severity != "error":
        return False
    if d.code == "missing-key":
        return schema.missing(d) == guess and d.path == parent
    if guess not in _MISSING_KEY_CODES.get(d.code, ()):
        return False
    # located at the pool, at one of its keys (missing-accelerator: at machine_type), or at the
    # missing key itself (missing-chief); a pool inherits what defaults would have given it
    return d.path in (parent, f"{parent}.{guess}" if parent else guess) or d.path.startswith(f"{parent}.") \
        or parent.rpartition(".")[2] == "defaults"


def _sent_schema(sent: NativeSpec) -> list[Diagnostic]:
    """The schema's findings on the values ``extra:`` set (a replica count, a disk size out of
    the native key's range), at their ``extra`` lines. The strategy is left to extra.py: the
    API's enum names more strategies than the native key spells."""
    own = {sent.where(path)["path"] for path in sent.sent if len(path) > 1 and path != ("scheduling", "strategy")}
    own.discard(format_path(("extra",)))
    return [d for d in schema.check(sent) if d.path in own and d.path.startswith("extra.")]


def _once(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """``diagnostics`` without a rule's error about a value ``extra:`` sets that extra.py
    already refused at the same place (an unknown enum name: one finding, said once)."""
    refused = {(d.path, d.line, d.column) for d in diagnostics
               if d.severity == "error" and d.code.startswith("extra-")}
    return [d for d in diagnostics if d.code.startswith("extra-") or d.severity != "error"
            or (d.path, d.line, d.column) not in refused]


def _check_rungs(native: NativeSpec, options: Options, result: Result, described: dict[Path, Source], *,
                 compile_job: bool) -> None:
    """Each rung of ``fallback:`` checked as a whole job (vxtrain.loading.fallback), at most
    ``MAX_RUNGS`` of them (more is ``fallback-too-long``, at ``fallback``'s line).

    A rung's diagnostics join the spec's, except those rung 0 already has at the same
    place (a rung that inherits a mistake does not repeat it: fix it once, in the spec).
    One located outside the rung's own entry (a key it inherits, made wrong by what the
    rung changed) says which rung in its message. A rung whose entry is that of a rung
    before it is the same job: it is not checked again, but takes that rung's findings,
    moved to its own entry's lines (``_repeat``).
    """
    listed = entries(native)
    if len(listed) > MAX_RUNGS:
        result.diagnostics.append(dx.error(
            "fallback-too-long", f"fallback has {len(listed):,} entries; at most {MAX_RUNGS} are accepted (each is "
            "a job checked now and a create tried at submit): keep the regions and machines worth trying",
            **native.where((FALLBACK_KEY,))))
    seen = {_place(d) for d in result.diagnostics}
    checked: list[tuple[Rung, Result]] = []  # each rung checked in full, with its findings before the filter
    for rung in rungs(native, MAX_RUNGS):
        own = _repeat(rung, listed, checked)
        if own is None:
            own = Result(file=result.file, document=result.document, native=rung.spec, strict=result.strict)
            _check_native(rung.spec, options, own, described, compile_job=compile_job, written=rung.written)
            checked.append((rung, own))
        entry = rung.spec.where(rung.entry)["path"]
        own = replace(own, diagnostics=[d if _inside(d.path, entry) else _in_rung(d, entry, rung.number)
                                        for d in own.diagnostics if _place(d) not in seen])
        result.diagnostics += own.diagnostics
        result.fallback.append(own)
    if dx.has_errors(result.diagnostics):
        # A bad rung (or too many) makes the whole spec invalid: no job to send, not even rung 0's.
        result.custom_job = result.hyperparameter_tuning_job = None


def _repeat(rung: Rung, listed: list[Any], checked: list[tuple[Rung, Result]]) -> Result | None:
    """The Result of a rung checked before whose entry equals ``rung``'s (the same job: its
    model, plans and compiled job), with its findings moved from that entry's lines to
    ``rung``'s; None when no such rung, or when a finding inside it cannot be moved."""
    over = listed[rung.number - 1]
    for earlier, done in checked:
        if equal(listed[earlier.number - 1], over):
            moved = _moved(done.diagnostics, earlier, rung)
            return None if moved is None else replace(done, native=rung.spec, diagnostics=moved)
    return None


def _moved(diagnostics: list[Diagnostic], earlier: Rung, rung: Rung) -> list[Diagnostic] | None:
    """``diagnostics`` of ``earlier`` as ``rung`` (the same entry, written elsewhere) has them:
    those located at a key the entry wrote are located at ``rung``'s; None when one inside the
    entry is at a place no written key has."""
    to: dict[tuple[str, int | None, int | None], dict[str, Any]] = {}
    for path in earlier.written:
        was = earlier.spec.where(path)
        to[was["path"], was["line"], was["column"]] = rung.spec.where(path)
    entry = earlier.spec.where(earlier.entry)["path"]
    out = []
    for d in diagnostics:
        if _inside(d.path, entry):
            now = to.get((d.path, d.line, d.column))
            if now is None:
                return None
            d = replace(d, path=now["path"], line=now["line"], column=now["column"])
        out.append(d)
    return out


def _inside(path: str, entry: str) -> bool:
    """Whether the key path ``path`` is ``entry`` or under it (``fallback[1]`` is not under ``fallback[10]``)."""
    return path == entry or path.startswith((f"{entry}.", f"{entry}["))


def _place(d: Diagnostic) -> tuple[object, ...]:
    """What makes two diagnostics the same finding: its code and where it points."""
    return d.code, d.file, d.path, d.line, d.column


def _in_rung(d: Diagnostic, entry: str, number: int) -> Diagnostic:
    """``d`` (about a key the rung inherits) with the rung named in its message."""
    return replace(d, message=f"in fallback rung {number} ({entry} merged over the spec): {d.message}")


def _compile(result: Result, described: dict[Path, Source]) -> None:
    """Resolve what the compiler needs from outside the model, then compile: each step a
    new model, so ``result.job`` ends as the job that is compiled (``described``: the
    source folders hashed so far in this check)."""
    assert result.job is not None and result.native is not None
    result.job = _resolved(result, result.job, described)
    # Compile starts from the spec as written and merges ``extra`` last, so what is sent is
    # exactly what the user wrote; the model as sent (result.job) is what was checked.
    written = result.job if result.sent is result.native else \
        _resolved(result, model.build(result.native.data), described)
    result.custom_job = compiler.compile_custom_job(written)
    if written.study is not None:
        result.hyperparameter_tuning_job = compiler.compile_hpt_job(written)


def _resolved(result: Result, job: model.Job, described: dict[Path, Source]) -> model.Job:
    """``job`` with its Reduction Server sized and its package and image URIs resolved
    (``result.packages`` and ``result.images``: what a submit publishes)."""
    assert result.plan is not None and result.native is not None
    job = bandwidth.resolve(job, result.plan)
    # Hashing reads files, so it happens here and the compiler stays pure: it only sees
    # the content-addressed URIs (package_uris, image).
    if any(p.python_package is not None and p.python_package.source for p in job.pools.values()):
        # lazy: packaging.sdists and its upload module cost ~25 ms of imports (-X importtime),
        # a tenth of validate's start-up, for the specs with python_package.source alone
        from vxtrain.packaging import sdists

        job, result.packages = sdists.resolve(job, result.native.source.folder, job.staging_bucket, described)
    if any(p.build is not None for p in job.pools.values()):
        # lazy: images.recipe costs ~6 ms of imports (-X importtime), 3% of validate's start-up,
        # for the specs with build: alone
        from vxtrain.images import recipe

        job, result.images = recipe.resolve(job, result.native.source.folder, job.image_repository, described)
    return job


def _price(result: Result, options: Options) -> None:
    """The cost plan of the compiled job, its warnings, and the --max-hourly-cost guardrail."""
    if not options.cost and options.max_hourly_cost is None:
        return  # validate stays free of price warnings (and of the price catalog)
    # lazy: planning.cost and the price catalog cost ~12 ms of imports (-X importtime), for
    # plan and --max-hourly-cost alone
    from vxtrain.planning import cost

    assert result.job is not None
    result.cost = cost.plan(result.job)
    if options.cost:
        result.diagnostics += cost.diagnostics(result.cost, result.sent or result.native)
    if options.max_hourly_cost is not None:
        refused = cost.over_limit(result.cost, options.max_hourly_cost)
        result.diagnostics += [refused] if refused is not None else []


def _finish(result: Result) -> Result:
    result.diagnostics = _capped(sorted((d.with_file(result.file) for d in result.diagnostics),
                                        key=dx.sort_key))
    return result


def _capped(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """At most MAX_ERRORS errors for one file (docs/decisions.md, "Limits"): the loader stops
    there, and the schema and the rules keep to it too (20,000 bad labels gave 40,000 errors).
    The errors past it are counted in a ``too-many-errors`` error located at the last one kept."""
    errors = [i for i, d in enumerate(diagnostics) if d.severity == "error"]
    if len(errors) <= MAX_ERRORS:
        return diagnostics
    last = errors[MAX_ERRORS - 1]
    kept = diagnostics[:last + 1]
    dropped = diagnostics[last + 1:]
    more = sum(d.severity == "error" for d in dropped)
    at = diagnostics[last]
    return [*kept, dx.error("too-many-errors", f"stopped after {MAX_ERRORS} errors ({more:,} more and "
                                               f"{len(dropped) - more:,} warnings not shown): fix these first",
                            at.path, file=at.file, line=at.line, column=at.column)]


def load_job(path: str | Path, options: Options | None = None) -> Result:
    """The compiled job of one valid spec; raises SpecError when it is not valid."""
    result = check_file(path, options)
    result.raise_for_errors()
    return result



def load(path: str | Path, options: Options | None = None) -> Document:
    """The loaded document (overlays, --set and ${VAR} applied); raises SpecError."""
    document, diags = _load(path, options or Options())
    if document is None or dx.has_errors(diags):
        raise SpecError([d.with_file(str(path)) for d in diags])
    return document
