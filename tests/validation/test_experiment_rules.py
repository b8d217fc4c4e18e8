"""The Experiment a job reports to and its protected artifact location
(vxtrain.validation.experiment_rules), natively and through ``extra:``."""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from vxtrain import api, model
from vxtrain.loading.document import Document, NativeSpec
from vxtrain.validation import rules
from tests.validation.specs import E, W, changed

IMAGE = "us-docker.pkg.dev/p/train/bert:1"
CTX = "projects/p/locations/us-central1/metadataStores/default/contexts/"
BASE: dict[str, Any] = {"display_name": "t", "region": "us-central1",
                        "chief": {"image": IMAGE, "machine_type": "n1-standard-8"}}
CODES = ("experiment", "protected-artifact")


def found(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    diags = rules.check(model.build(data), NativeSpec(data, "native", Document(data, "t.yaml", {})))
    return sorted((d.severity, d.code, d.path) for d in diags if d.code.startswith(CODES))


CASES: list[tuple[str, dict[str, Any], list[tuple[str, str, str]]]] = [
    ("experiment", changed(BASE, experiment=CTX + "bert"), []),
    ("experiment-and-run", changed(BASE, experiment=CTX + "bert", experiment_run=CTX + "bert-run-1"), []),
    ("experiment-short-name", changed(BASE, experiment="bert"), [E("experiment-name", "experiment")]),
    ("run-without-experiment", changed(BASE, experiment_run=CTX + "bert-run-1"),
     [E("experiment-run-needs-experiment", "experiment_run")]),
    ("run-of-other-experiment", changed(BASE, experiment=CTX + "bert", experiment_run=CTX + "gpt-run-1"),
     [E("experiment-run-of-other", "experiment_run")]),
    ("run-in-other-store", changed(BASE, experiment=CTX + "bert", experiment_run=CTX.replace("default", "s2")
                                   + "bert-run-1"), [E("experiment-run-of-other", "experiment_run")]),
    ("run-malformed", changed(BASE, experiment=CTX + "bert", experiment_run="run-1"),
     [E("experiment-run-name", "experiment_run")]),
    ("experiment-elsewhere", changed(BASE, experiment=CTX.replace("us-central1", "europe-west4") + "bert"),
     [W("experiment-location", "experiment")]),
    ("protected-location", changed(BASE, protected_artifact_location_id="europe-west4"), []),
    ("protected-same-region", changed(BASE, protected_artifact_location_id="us-central1"),
     [W("protected-artifact-location", "protected_artifact_location_id")]),
    ("protected-typo", changed(BASE, protected_artifact_location_id="europe-wst4"),
     [E("protected-artifact-location", "protected_artifact_location_id")]),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_experiment_rules(data: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert found(data) == sorted(expected)


def test_typo_gets_a_did_you_mean() -> None:
    data = changed(BASE, protected_artifact_location_id="europe-wst4")
    (d,) = [d for d in rules.check(model.build(data), NativeSpec(data, "native", Document(data, "t.yaml", {})))
            if d.code == "protected-artifact-location"]
    assert "did you mean 'europe-west4'?" in d.message


def test_experiment_run_in_extra_meets_the_same_rule_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(f"""\
        display_name: t
        region: us-central1
        chief: {{image: {IMAGE}, machine_type: n1-standard-8}}
        extra:
          jobSpec:
            enableDashboardAccess: true
            experimentRun: {CTX}bert-run-1
        """))
    result = api.check_file(path, api.Options(environ={}))
    (d,) = [d for d in result.diagnostics if d.severity == "error"]
    assert (d.code, d.path, d.line, d.column) == (
        "experiment-run-needs-experiment", "extra.jobSpec.experimentRun", 7, 5)
