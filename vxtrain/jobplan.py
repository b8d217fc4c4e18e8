"""Submit's preparation: a checked spec (a vxtrain.pipeline.Result) made into the plan of
its job's life (vxtrain.submission.plan.Plan) and how each rung is sent from this host
(vxtrain.submission.carry.Rigging), as plain data.

Rung 0 is the spec, then each ``fallback:`` entry; the plan carries each one's project,
region and compiled job, the ``recovery:`` policy and the key; the rigging how an emulator
runs it here and what must be published before its create
(vxtrain.submission.publish.Publication: the images, the packages, and the refusal to give
when no repository or bucket is set, located at the key that needs it). Nothing here
talks to an API, pushes or uploads: vxtrain.submission does, in its order.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from vxtrain import diagnostics as dx
from vxtrain import settings
from vxtrain.backends.base import LocalRun
from vxtrain.errors import UsageError
from vxtrain.loading.document import NativeSpec, spec_folder
from vxtrain.model import LocalSpec, key_path_of
from vxtrain.sources.folder import import_root
from vxtrain.pipeline import Result
from vxtrain.settings import Setting
from vxtrain.slots import POOL_INDEX
from vxtrain.submission import LOCAL_PROJECT, LOCAL_REGION, Plan, PlannedRung, RecoveryPolicy, Rigging
from vxtrain.submission.plan import NotifyTarget
from vxtrain.submission.publish import Publication


@dataclass(frozen=True)
class SpecRung:
    """One rung of a checked spec: its number (0: the spec), its own Result, its compiled
    job (REST JSON), project and region."""

    number: int
    result: Result
    job: dict[str, Any]
    project: str
    region: str


#: Application Default Credentials' project, asked for once per submit (vxtrain.settings.adc_project).
Adc = Callable[[], "Setting | None"]


def spec_rungs(result: Result, *, local: bool, adc: Adc | None = None) -> Iterator[SpecRung]:
    """The spec, then each rung of its ``fallback:``, in the order submit climbs them (and
    ``quota`` reports them). ``local``: an emulator here, which defaults project and region.
    ``adc``: tier 4 of the project (default: asked at most once for these rungs)."""
    adc = adc or functools.cache(settings.adc_project)
    for number, each in enumerate([result, *result.fallback]):
        job = each.hyperparameter_tuning_job or each.custom_job
        assert job is not None  # a valid result is compiled, every rung of it
        project, region = project_region(each, local=local, adc=adc)
        yield SpecRung(number, each, job, project, region)


def plan_of(result: Result, key: str, *, emulated: bool, in_place: bool = False,
            adc: Adc | None = None) -> tuple[Plan, list[Rigging]]:
    """The plan of ``result``'s job under ``key`` (its rungs as sent, its recovery policy), and
    how each rung is sent from here. ``emulated``: an emulator runs the jobs on this host (each
    rung says how: its ``local:`` block and folder). ``in_place``: a local run uses each source
    package's folder as it is and builds no image, so nothing is published."""
    rungs, rigging = [], []
    for rung in spec_rungs(result, local=emulated, adc=adc):
        job = _local_packages(rung.job, rung.result) if in_place else rung.job
        rungs.append(PlannedRung(rung.number, rung.project, rung.region, job))
        rigging.append(Rigging(local_run(rung.result) if emulated else None,
                               None if in_place else publication(rung.result), _staging_bucket(rung.result)))
    assert result.job is not None  # a valid result has its model
    recovery = RecoveryPolicy.of(result.job.recovery) if result.job.recovery is not None else None
    notify = tuple(NotifyTarget(url_env, secret_env) for url_env, secret_env in result.job.notify_env)
    return Plan(key, tuple(rungs), recovery, notify), rigging


def _staging_bucket(result: Result) -> str | None:
    """The rung's staging bucket (flag > spec), where a chosen key's lease (and plan) is kept."""
    return result.job.staging_bucket if result.job is not None else None


def publication(result: Result) -> Publication | None:
    """What ``result``'s job needs published before its create, None when nothing."""
    if not result.images and not result.packages:
        return None
    return Publication(tuple(result.images), tuple(result.packages),
                       no_repository=_no_repository(result), no_bucket=_no_bucket(result))


def _no_repository(result: Result) -> dx.Diagnostic | None:
    """The refusal of images that have no repository to go to, at the key that needs one."""
    if all(i.repository_set for i in result.images):
        return None
    return dx.error(
        "no-image-repository", "build: images must be pushed before the job is created, and no image "
        "repository is set: pass --image-repository HOST/PATH (e.g. us-central1-docker.pkg.dev/PROJECT/REPO) "
        "or set image_repository: in the spec",
        **where(result, result.images[0].roles[0], "build"))


def _no_bucket(result: Result) -> dx.Diagnostic | None:
    """The refusal of source packages that have no staging bucket, at the key that needs one."""
    if all(p.bucket_set for p in result.packages):
        return None
    return dx.error(
        "no-staging-bucket", "python_package.source must be uploaded before the job is created, and no "
        "staging bucket is set: pass --staging-bucket gs://BUCKET[/PREFIX] or set staging_bucket: in the spec",
        **where(result, result.packages[0].roles[0], "python_package", "source"))


def where(result: Result, role: str, *keys: str) -> dict[str, Any]:
    """The location of pool ``role``'s key ``keys`` (written in the pool, else in ``defaults``)."""
    native = _native(result)
    return native.where(key_path_of(native.data, role, *keys))


def _native(result: Result) -> NativeSpec:
    assert result.native is not None  # a compiled result was normalized
    return result.native


def _local_packages(job: dict[str, Any], result: Result) -> dict[str, Any]:
    """The job with each source package's URI replaced by its folder: local runs use DIR as it is."""
    if not result.packages:
        return job
    text = json.dumps(job)
    for p in result.packages:
        text = text.replace(json.dumps(p.uri), json.dumps(str(import_root(p.source.path, p.module))))
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def used_settings(result: Result, *, local: bool, adc: Adc = settings.adc_project) -> dict[str, Setting | None]:
    """The project and region ``result``'s job goes to, each with where it came from: tiers 1
    to 3 as the pipeline applied them (vxtrain.settings), then the project of Application
    Default Credentials (tier 4, ``adc``) off an emulator, then, on an emulator (``local``),
    the stand-ins. None where nothing gives one."""
    assert result.job is not None  # a compiled result has its model
    used: dict[str, Setting | None] = {}
    values = {"project": (result.job.project, LOCAL_PROJECT), "region": (result.job.region, LOCAL_REGION)}
    for key in settings.KEYS:
        value, stand_in = values[key]
        found = result.settings.get(key)
        if value:  # a fallback rung's own value is the spec's (its entry merged over it)
            used[key] = found if found is not None and found.value == value else Setting(str(value), settings.SPEC,
                                                                                            settings.SPEC)
        elif local:
            used[key] = settings.stand_in(key, stand_in)
        else:
            used[key] = adc() if key == "project" else None
    return used


def project_region(result: Result, *, local: bool, adc: Adc = settings.adc_project) -> tuple[str, str]:
    """Project and region (:func:`used_settings`); UsageError naming every tier when one is missing."""
    used = used_settings(result, local=local, adc=adc)
    project, region = used["project"], used["region"]
    missing = [what for what, value in (("project", project), ("region", region)) if value is None]
    if missing:
        raise UsageError(
            f"no {' and no '.join(missing)} to submit to: pass --project/--region, set project:/region: in the "
            f"spec, export GOOGLE_CLOUD_PROJECT/CLOUD_ML_REGION or CLOUDSDK_CORE_PROJECT/CLOUDSDK_AI_REGION, "
            f"or run `gcloud config set project PROJECT` and `gcloud config set ai/region REGION` "
            f"(or use --target local)")
    assert project is not None and region is not None
    return project.value, region.value


def local_run(result: Result) -> LocalRun:
    """How an emulator runs the spec's job on its host: the ``local:`` block and the spec's
    folder (the CustomJob carries neither; see vxtrain.backends.base.LocalRun)."""
    assert result.job is not None  # a compiled result has its model
    local = result.job.local
    if result.images:  # build: images run locally as their source folder, in place (nothing is built)
        local = replace(local or LocalSpec(), image_sources={i.uri: str(i.source.path) for i in result.images})
    return LocalRun(local, str(spec_folder(result.file)))


_POOL_IN_MESSAGE = re.compile(r"(?:worker_pool_specs|workerPoolSpecs)\[(\d+)\]")


def spec_location(result: Result, message: str) -> str:
    """`` (at FILE:LINE:COL, key ROLE)`` for the pool a server message names, else ``""``."""
    found = _POOL_IN_MESSAGE.search(message)
    native = result.native
    if not found or native is None:
        return ""
    index = int(found.group(1))
    roles = [r for r, i in POOL_INDEX.items() if i == index and r in native.data]
    if not roles:
        return ""
    at = native.where((roles[0],))
    return f" (at {at['file']}:{at['line']}:{at['column']}, key {at['path']})"
