"""Names of jobs: resource names (full, or a bare id with project and region), parents,
the idempotency label, the console URL, the local defaults of project and region."""
from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from vxtrain import errors
from vxtrain.model import IDEMPOTENCY_LABEL
from vxtrain.packaging.upload import split_gs_uri
from vxtrain.vocab.kinds import CUSTOM, KINDS, JobKind

#: The label that makes a create idempotent (Vertex label keys: lowercase,
#: [a-z0-9_-], ≤ 63: https://cloud.google.com/vertex-ai/docs/general/resource-labels).
#: Beside it, vxtrain.model.RUNG_LABEL says which rung of a spec's ``fallback:`` ladder
#: a job is: the rungs of one key each make their own job, once.
LABEL_KEY = IDEMPOTENCY_LABEL
#: A job's page in the Cloud console.
CONSOLE_URL = ("https://console.cloud.google.com/vertex-ai/locations/{region}/training/{id}/cpu"
               "?project={project}")
#: Project and region of jobs on an emulator when none is given.
LOCAL_PROJECT = "local-project"
LOCAL_REGION = "us-central1"

_LABEL_VALUE = re.compile(r"[a-z0-9_-]{1,63}")
_COLLECTIONS = "|".join(kind.collection for kind in KINDS.values())
_NAME = re.compile(rf"^projects/([^/]+)/locations/([^/]+)/({_COLLECTIONS})/([^/]+)$")


def parent_of(project: str, region: str) -> str:
    """``projects/P/locations/R``: where jobs are created and listed."""
    return f"projects/{project}/locations/{region}"


def label_value(key: str) -> str:
    """``key`` as a Vertex label value: itself when label-safe, else a readable slug plus a hash."""
    if _LABEL_VALUE.fullmatch(key):
        return key
    slug = re.sub(r"[^a-z0-9_-]+", "-", key.lower()).strip("-")[:40]
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    return f"{slug}-{digest}" if slug else digest


def resolve_name(name: str, *, project: str | None = None, region: str | None = None,
                 kind: JobKind = CUSTOM) -> str:
    """A full resource name from a full name or a bare id plus project and region."""
    if _NAME.match(name):
        return name
    if "/" in name:
        raise errors.UsageError(f"not a job name: {name!r}; expected "
                                f"projects/P/locations/R/customJobs/ID or a bare ID")
    if not project or not region:
        raise errors.UsageError(f"a bare job id ({name}) needs --project and --region "
                                f"(or GOOGLE_CLOUD_PROJECT and CLOUD_ML_REGION)")
    return f"{parent_of(project, region)}/{kind.collection}/{name}"


def split_name(name: str) -> tuple[str, str, str, str]:
    """(project, region, collection, id) of a full resource name."""
    found = _NAME.match(name)
    if not found:
        raise errors.UsageError(f"not a job resource name: {name!r}")
    project, region, collection, job_id = found.groups()
    return project, region, collection, job_id


def console_url(name: str) -> str:
    """The Cloud console page of a job (the SDK uses the "training" page for both kinds)."""
    project, region, _, job_id = split_name(name)
    return CONSOLE_URL.format(region=region, id=job_id, project=project)


def bucket_name(staging_bucket: str | None) -> str | None:
    """``gs://BUCKET[/PREFIX]`` → ``BUCKET`` (the lease lives at the bucket's root); None without one."""
    if not staging_bucket:
        return None
    try:
        return split_gs_uri(staging_bucket)[0]
    except ValueError:
        return None  # not a gs:// URI: validation says so where packages need it


def build_filter(filter_: str | None = None, labels: Mapping[str, str] | None = None,
                 state: str | None = None) -> str:
    """One list filter: the raw one AND each ``labels.k="v"`` AND ``state=...``."""
    parts = [f"({filter_})"] if filter_ else []
    parts += [f'labels.{k}="{_quoted(v)}"' for k, v in (labels or {}).items()]
    if state:
        parts.append(f'state="{normalize_state(state)}"')
    return " AND ".join(parts)


def _quoted(value: str) -> str:
    """``value`` escaped for a double-quoted AIP-160 string."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def normalize_state(state: str) -> str:
    """``running`` / ``RUNNING`` / ``JOB_STATE_RUNNING`` → ``JOB_STATE_RUNNING``."""
    upper = state.strip().upper()
    return upper if upper.startswith("JOB_STATE_") else f"JOB_STATE_{upper}"
