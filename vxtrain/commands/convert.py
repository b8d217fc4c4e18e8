"""``vxtrain convert FILE --to native|gcloud|gcloud-command``.

- native: the native YAML of any input (legacy and gcloud configs migrate here);
- gcloud: the CustomJobSpec YAML that ``gcloud ai custom-jobs create --config`` takes;
- gcloud-command: a shell snippet that writes that config and runs the create
  command, every value shell-quoted. The config file is used (not
  ``--worker-pool-spec`` flags) because the flags cannot express per-pool
  commands, env, disks, scheduling or empty pools.
"""
from __future__ import annotations

import shlex
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
import yaml

from vxtrain import api
from vxtrain.api import Options
from vxtrain.commands import _common as c
from vxtrain.diagnostics import Diagnostic, warning
from vxtrain.formats import native_document
from vxtrain.loading.document import NativeSpec
from vxtrain.loading.fallback import FALLBACK_KEY


class ConvertTarget(str, Enum):
    """``--to`` choices."""

    native = "native"
    gcloud = "gcloud"
    gcloud_command = "gcloud-command"


def _yaml(data: Any) -> str:
    """YAML as a person would write it: keys in order, block style, and multi-line strings
    (a ``bash -c`` script, say) as ``|`` block scalars instead of escaped one-liners."""
    class Dumper(yaml.SafeDumper):
        """SafeDumper with block scalars for multi-line strings."""

    def represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        # PyYAML falls back to a quoted scalar by itself where a block cannot hold the
        # text exactly (trailing spaces on a line, control characters), so this never
        # changes what the file loads back to.
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, represent_str)
    # No allow_unicode: PyYAML writes U+0085 and U+2028 raw and reads them back as line breaks.
    text: str = yaml.dump(data, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=100)
    return text


def convert(path: str, to: ConvertTarget, options: Options) -> int:
    """Print ``path`` in the target form; exit 1 (with diagnostics) when it is invalid."""
    result = api.load_job(path, options)
    native, custom_job, job = result.native, result.custom_job, result.job
    assert native is not None and custom_job is not None and job is not None  # load_job returns compiled results only
    if to is ConvertTarget.native:
        text = _yaml(native_document(native))
    elif to is ConvertTarget.gcloud:
        text = _yaml(custom_job["jobSpec"])
    else:
        text = gcloud_command(custom_job, job.project, job.region, Path(path).stem)
    warnings = [d for d in result.diagnostics if d.severity == "warning"]
    if to is not ConvertTarget.native and result.fallback:
        warnings.append(_ladder_dropped(native, len(result.fallback), to))
    c.print_diagnostics(warnings)
    typer.echo(text, nl=not text.endswith("\n"))
    return 0


def _ladder_dropped(native: NativeSpec, rungs: int, to: ConvertTarget) -> Diagnostic:
    """The warning that ``--to gcloud``/``gcloud-command`` writes rung 0 only: gcloud has no fallback."""
    return warning("fallback-dropped", f"--to {to.value} writes the spec itself (rung 0) only: gcloud has no "
                   f"fallback, so the {rungs} `fallback:` {'entry is' if rungs == 1 else 'entries are'} left out; "
                   "`vxtrain submit` climbs them "
                   "(`--to native` keeps them)", **native.where((FALLBACK_KEY,)))


def gcloud_command(custom_job: dict[str, Any], project: str | None, region: str | None, stem: str) -> str:
    """Shell lines that write the gcloud config and run ``gcloud ai custom-jobs create``."""
    config = f"{stem}.gcloud.yaml"
    argv = ["gcloud", "ai", "custom-jobs", "create", f"--display-name={custom_job['displayName']}"]
    if region:
        argv.append(f"--region={region}")
    if project:
        argv.append(f"--project={project}")
    labels = custom_job.get("labels") or {}
    if labels:
        argv.append("--labels=" + ",".join(f"{k}={v}" for k, v in labels.items()))
    argv.append(f"--config={config}")
    marker = "VXTRAIN_CONFIG_EOF"
    body = _yaml(custom_job["jobSpec"])
    return (f"cat > {shlex.quote(config)} <<'{marker}'\n{body}{marker}\n"
            + " ".join(shlex.quote(a) for a in argv) + "\n")


def register(app: typer.Typer) -> None:
    """Add the ``convert`` command."""

    @c.command(app, "convert")
    @c.spec_options
    def _cmd(
        path: Annotated[str, typer.Argument(metavar="FILE", help="Spec file in any format.")],
        to: Annotated[ConvertTarget, typer.Option("--to", help="native, gcloud or gcloud-command.")],
        package_path: Annotated[Optional[str], typer.Option(
            "--package-path", help="Legacy configs: the package folder gcloud's --package-path gave "
            "(written as python_package.source, relative to the spec).")] = None,
        module_name: Annotated[Optional[str], typer.Option(
            "--module-name", help="Legacy configs: the module gcloud's --module-name gave.")] = None,
        *,
        options: Options,
    ) -> None:
        options.package_path, options.module_name = package_path, module_name
        raise typer.Exit(convert(path, to, options))
