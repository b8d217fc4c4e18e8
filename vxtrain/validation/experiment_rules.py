"""The Vertex AI Experiment a job reports to (``experiment``, ``experiment_run``) and where its
protected artifacts go (``protected_artifact_location_id``): the formats and rules the
CustomJobSpec fields' docs state (google/cloud/aiplatform/v1/custom_job.proto, SPEC_DOC).

- experiment: ``projects/{project}/locations/{location}/metadataStores/{metadataStores}/contexts/{experiment-name}``
- experiment_run: ``.../contexts/{experiment-name}-{experiment-run-name}``: a run is a context
  of its experiment's store named after it, so it needs ``experiment`` and must carry its name
  (derived from the format; docs/decisions.md).
- protected_artifact_location_id: "The ID of the location to store protected artifacts. e.g.
  us-central1. Populate only when the location is different than CustomJob location."
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from vxtrain import catalog
from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.loading.document import NativeSpec
from vxtrain.model import Job

SPEC_DOC = "https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec"
#: A pattern, not a compiled one: ``re`` compiles and caches it on first use, off validate's start.
_CONTEXT = r"projects/([^/]+)/locations/([^/]+)/metadataStores/([^/]+)/contexts/([^/]+)"
_FORMAT = "projects/PROJECT/locations/LOCATION/metadataStores/default/contexts/"


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """The experiment's and its run's names, and the protected artifact location."""
    experiment = _context(job.experiment, "experiment", "EXPERIMENT", native)
    run = _context(job.experiment_run, "experiment_run", "EXPERIMENT-RUN", native)
    yield from experiment[1]
    yield from run[1]
    yield from _run_of(job, experiment[0], run[0], native)
    yield from _location(job, experiment[0], native)
    yield from _protected(job, native)


def _context(value: str | None, key: str, tail: str,
             native: NativeSpec) -> tuple[re.Match[str] | None, list[Diagnostic]]:
    if value is None:
        return None, []
    match = re.fullmatch(_CONTEXT, value)
    if match is not None:
        return match, []
    return None, [error(f"{key.replace('_', '-')}-name", f"{key} {value!r} is not a metadata context name: "
                        f"write {_FORMAT}{tail} (CustomJobSpec.{_camel(key)}, {SPEC_DOC})",
                        **native.where((key,)))]


def _run_of(job: Job, experiment: re.Match[str] | None, run: re.Match[str] | None,
            native: NativeSpec) -> Iterator[Diagnostic]:
    if job.experiment_run is None:
        return
    if job.experiment is None:
        yield error("experiment-run-needs-experiment", "experiment_run is set without experiment: a run is the "
                    "context {experiment-name}-{experiment-run-name} of its experiment (CustomJobSpec.experimentRun, "
                    f"{SPEC_DOC}); add experiment: {_FORMAT}EXPERIMENT", **native.where(("experiment_run",)))
        return
    if experiment is None or run is None:
        return  # a malformed name is reported above
    prefix = f"{experiment.group(4)}-"
    if run.group(1, 2, 3) != experiment.group(1, 2, 3) or not run.group(4).startswith(prefix):
        yield error("experiment-run-of-other", f"experiment_run {job.experiment_run!r} is not a run of experiment "
                    f"{experiment.group(4)!r}: a run is the context {prefix}RUN in the experiment's own project, "
                    f"location and metadata store (CustomJobSpec.experimentRun, {SPEC_DOC}); write "
                    f"{job.experiment}-RUN", **native.where(("experiment_run",)))


def _location(job: Job, experiment: re.Match[str] | None, native: NativeSpec) -> Iterator[Diagnostic]:
    if experiment is None or job.region is None or experiment.group(2) == job.region:
        return
    yield warning("experiment-location", f"experiment is in location {experiment.group(2)!r} but the job runs in "
                  f"{job.region!r}; Vertex AI's SDK creates the experiment in the job's location (unverified "
                  "whether the API accepts another)", **native.where(("experiment",)))


def _protected(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    location = job.protected_artifact_location_id
    if location is None:
        return
    where = native.where(("protected_artifact_location_id",))
    if catalog.region(location) is None:
        near = catalog.near_region(location)
        hint = f"did you mean {near[0]!r}? " if near else ""
        yield error("protected-artifact-location", f"protected_artifact_location_id {location!r} is not a Vertex AI "
                    f"location; {hint}give a location ID such as us-central1 "
                    "(https://cloud.google.com/vertex-ai/docs/general/locations)", **where)
    elif location == job.region:
        yield warning("protected-artifact-location", f"protected_artifact_location_id is the job's own region "
                      f"({location}): \"Populate only when the location is different than CustomJob location\" "
                      f"(CustomJobSpec.protectedArtifactLocationId, {SPEC_DOC}); leave it out", **where)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)
