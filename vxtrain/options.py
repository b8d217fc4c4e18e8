"""What the shared options of every spec-reading command say, as plain values.

Its own small module, below the pipeline: the command line builds an ``Options`` for
every command that reads a spec, and a command that only talks to an API (``status``,
``logs``) must not pay for importing the pipeline's stages to name this type.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Options:
    """What the shared CLI options say, as plain values."""

    overlays: Sequence[str | Path] = ()
    sets: Sequence[str] = ()
    variables: Mapping[str, str] = field(default_factory=dict)
    environ: Mapping[str, str] | None = None
    project: str | None = None
    region: str | None = None
    display_name: str | None = None
    strict: bool = False
    gradient_size: float | None = None
    staging_bucket: str | None = None
    image_repository: str | None = None  # where images built from ``build:`` go (--image-repository)
    #: gcloud's --package-path/--module-name for legacy configs (convert): python_package.source
    package_path: str | None = None
    module_name: str | None = None
    cost: bool = False  # price the job, warning about prices the catalog lacks (plan)
    max_hourly_cost: float | None = None  # USD: refuse a job whose cost per hour is above (or unknown)
