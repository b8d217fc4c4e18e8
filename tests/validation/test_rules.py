"""Semantic rules: one table row per rule and variant; exact codes, severities and paths."""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vxtrain.diagnostics import Diagnostic
from vxtrain import model
from vxtrain.validation import container_rules, rules
from vxtrain.validation import schema
from vxtrain.loading.document import Document, NativeSpec, Position
from tests.validation.specs import E, W, changed

IMAGE = "us-docker.pkg.dev/p/train/bert:1"
EXECUTOR = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest"
V100 = "NVIDIA_TESLA_V100"
BASE: dict[str, Any] = {"display_name": "t", "chief": {"machine_type": "n1-standard-8", "image": IMAGE}}
GPU_POOL = {"machine_type": "n1-highmem-96", "accelerator": {"type": V100, "count": 8}}
L4_POOL = {"machine_type": "g2-standard-8", "accelerator": {"type": "NVIDIA_L4", "count": 1}}


def spec(**changes: Any) -> dict[str, Any]:
    """BASE with top-level keys replaced (None deletes); dict values merge one level deep."""
    return changed(BASE, **changes)


def native_of(data: dict[str, Any], positions: dict[Any, Position] | None = None) -> NativeSpec:
    return NativeSpec(data, "native", Document(data, "t.yaml", positions or {}))


def run(data: dict[str, Any]) -> list[Diagnostic]:
    return rules.check(model.build(data), native_of(data))


def found(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((d.severity, d.code, d.path) for d in run(data))


RS_JOB = dict(chief=GPU_POOL | {"image": IMAGE}, workers=GPU_POOL | {"replicas": 4},
              defaults={"image": IMAGE}, reduction_server={"replicas": "auto"})

CASES: list[tuple[str, dict[str, Any], list[tuple[str, str, str]]]] = [
    ("valid-minimal", spec(), []),
    ("valid-reduction-server", spec(**RS_JOB), []),
    ("valid-g2", spec(chief={"machine_type": "g2-standard-8", "accelerator": {"type": "NVIDIA_L4"}}), []),
    ("valid-a2", spec(chief={"machine_type": "a2-highgpu-2g",
                             "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 2}}), []),
    # pool 0
    ("missing-chief", spec(chief=None, workers={"machine_type": "n1-standard-8", "image": IMAGE}),
     [E("missing-chief", "chief")]),
    ("chief-replicas-2", spec(chief={"replicas": 2}), [E("chief-replicas", "chief.replicas")]),
    ("chief-replicas-0", spec(chief={"replicas": 0}), [E("chief-replicas", "chief.replicas")]),
    ("chief-replicas-1", spec(chief={"replicas": 1}), []),
    # machine types
    ("machine-typo", spec(chief={"machine_type": "n1-standrad-8"}),
     [E("unknown-machine-type", "chief.machine_type")]),
    ("machine-case", spec(chief={"machine_type": "N1-STANDARD-8"}),
     [E("unknown-machine-type", "chief.machine_type")]),
    ("machine-typo-in-defaults-once", spec(defaults={"machine_type": "n1-highmem96", "image": IMAGE},
                                           chief={"machine_type": None}, workers={"replicas": 2}),
     [E("unknown-machine-type", "defaults.machine_type")]),
    ("machine-a4-needs-its-gpus", spec(chief={"machine_type": "a4-highgpu-8g"}),
     [E("missing-accelerator", "chief.machine_type")]),
    ("valid-a4", spec(chief={"machine_type": "a4-highgpu-8g", "accelerator": {"type": "NVIDIA_B200", "count": 8}}), []),
    ("machine-not-offered", spec(chief={"machine_type": "c3-standard-8"}),
     [E("machine-not-offered", "chief.machine_type")]),
    ("machine-not-offered-small-n1", spec(chief={"machine_type": "n1-standard-1"}),
     [E("machine-not-offered", "chief.machine_type")]),
    ("machine-unknown", spec(chief={"machine_type": "z9-mega-1"}), [E("machine-not-offered", "chief.machine_type")]),
    ("machine-not-offered-gpus-not-doubled", spec(chief={"machine_type": "a3-edgegpu-8g"}),
     [E("machine-not-offered", "chief.machine_type")]),
    ("machine-missing", spec(chief={"image": IMAGE, "machine_type": None}) | {"chief": {"image": IMAGE}},
     [E("missing-machine-type", "chief")]),
    ("rs-default-machine", spec(**RS_JOB | {"reduction_server": {}}), []),
    # accelerators
    ("accelerator-typo", spec(chief={"accelerator": {"type": "NVIDIA_TESLA_V10"}}),
     [E("unknown-accelerator", "chief.accelerator.type")]),
    ("accelerator-on-n2", spec(chief={"machine_type": "n2-standard-8", "accelerator": {"type": "NVIDIA_TESLA_T4"}}),
     [E("accelerator-not-supported", "chief.accelerator.type")]),
    ("v100-on-g2", spec(chief={"machine_type": "g2-standard-8", "accelerator": {"type": V100}}),
     [E("accelerator-not-supported", "chief.accelerator.type")]),
    ("l4-count-on-g2", spec(chief={"machine_type": "g2-standard-8", "accelerator": {"type": "NVIDIA_L4", "count": 8}}),
     [E("accelerator-count", "chief.accelerator.count")]),
    ("v100-count-3", spec(chief={"accelerator": {"type": V100, "count": 3}}),
     [E("accelerator-count", "chief.accelerator.count")]),
    ("n1-too-large", spec(chief={"machine_type": "n1-highmem-96", "accelerator": {"type": V100, "count": 1}}),
     [E("n1-gpu-limits", "chief.accelerator.count")]),
    ("n1-highmem-16-two-v100-fit", spec(chief={"machine_type": "n1-highmem-16", "accelerator": {"type": V100, "count": 2}}),
     []),
    ("n1-too-large-no-count", spec(chief={"machine_type": "n1-highmem-96",
                                          "accelerator": {"type": "NVIDIA_TESLA_P100", "count": 4}}),
     [E("n1-gpu-limits", "chief.accelerator.count")]),
    ("p100x4-on-n1-standard-96", spec(chief={"machine_type": "n1-standard-96",
                                             "accelerator": {"type": "NVIDIA_TESLA_P100", "count": 4}}),
     [E("n1-gpu-limits", "chief.accelerator.count")]),
    ("p100x4-on-n1-highcpu-64-fits", spec(chief={"machine_type": "n1-highcpu-64",
                                                 "accelerator": {"type": "NVIDIA_TESLA_P100", "count": 4}}), []),
    ("t4x1-on-n1-standard-32", spec(chief={"machine_type": "n1-standard-32",
                                           "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 1}}),
     [E("n1-gpu-limits", "chief.accelerator.count")]),
    ("k80-refused", spec(chief={"machine_type": "n1-standard-4", "accelerator": {"type": "NVIDIA_TESLA_K80"}}),
     [E("accelerator-not-supported", "chief.accelerator.type")]),
    ("k80-refused-any-count", spec(chief={"machine_type": "n1-highmem-96",
                                          "accelerator": {"type": "NVIDIA_TESLA_K80", "count": 3}}),
     [E("accelerator-not-supported", "chief.accelerator.type")]),
    ("tpu-v4-not-offered", spec(chief={"machine_type": "cloud-tpu", "accelerator": {"type": "TPU_V4_POD", "count": 32}}),
     [E("accelerator-not-supported", "chief.accelerator.type")]),
    ("a2-without-gpus", spec(chief={"machine_type": "a2-highgpu-1g"}), [E("missing-accelerator", "chief.machine_type")]),
    ("accelerator-in-defaults-once", spec(defaults={"image": IMAGE, "accelerator": {"type": V100, "count": 3}},
                                          workers={"replicas": 2, "machine_type": "n1-standard-8"}),
     [E("accelerator-count", "defaults.accelerator.count")]),
    ("accelerator-untabulated-machine", spec(chief={"machine_type": "ct5lp-hightpu-4t", "tpu_topology": "2x2",
                                                    "accelerator": {"type": "TPU_V5_LITEPOD", "count": 4}}), []),
    # Reduction Server
    ("rs-with-ps", spec(**RS_JOB | {"parameter_servers": {"machine_type": "n1-standard-16"}}),
     [E("rs-with-parameter-servers", "parameter_servers")]),
    ("rs-accelerator", spec(**RS_JOB | {"reduction_server": {"accelerator": {"type": V100, "count": 1}}}),
     [E("rs-accelerator", "reduction_server.accelerator")]),
    ("rs-without-gpus", spec(workers={"machine_type": "n1-standard-8", "replicas": 2, "image": IMAGE},
                             reduction_server={"replicas": 2}),
     [E("rs-without-gpus", "reduction_server")]),
    ("rs-cpu-chief", spec(**RS_JOB | {"chief": {"machine_type": "n1-standard-8", "image": IMAGE}}),
     [E("rs-without-gpus", "reduction_server")]),
    ("rs-a2-pools", spec(**RS_JOB | {"chief": {"machine_type": "a2-highgpu-8g", "image": IMAGE,
                                               "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 8}},
                                     "workers": None}), []),
    # what runs
    ("no-image", spec(chief={"machine_type": "n1-standard-8"}) | {"chief": {"machine_type": "n1-standard-8"}},
     [E("missing-image", "chief")]),
    ("image-from-defaults", spec(defaults={"image": IMAGE}, chief={"machine_type": "n1-standard-8"})
     | {"chief": {"machine_type": "n1-standard-8"}}, []),
    ("package-over-default-image", spec(defaults={"image": IMAGE}) | {"chief": {
        "machine_type": "n1-standard-8", "python_package": {
            "executor_image": EXECUTOR, "package_uris": ["gs://b/p.tar.gz"], "module": "trainer.task"}}}, []),
    ("image-and-package", spec(chief={"python_package": {
        "executor_image": EXECUTOR, "package_uris": ["gs://b/p.tar.gz"], "module": "trainer.task"}}),
     [E("image-and-package", "chief.python_package")]),
    # env
    ("env-digit", spec(chief={"env": {"1BAD": "x"}}), [E("bad-env-name", "chief.env.1BAD")]),
    ("env-dash", spec(chief={"env": {"MY-VAR": "x"}}), [E("bad-env-name", "chief.env.MY-VAR")]),
    ("env-defaults-once", spec(defaults={"env": {"A B": "x"}}, workers={"machine_type": "n1-standard-8",
                                                                       "image": IMAGE}),
     [E("bad-env-name", "defaults.env.A B")]),
    ("env-too-many", spec(chief={"env": {f"V{i}": "x" for i in range(101)}}), [E("too-many-env", "chief.env")]),
    ("env-100", spec(chief={"env": {f"V{i}": "x" for i in range(100)}}), []),
    ("env-secret", spec(chief={"env": {"HF_TOKEN": "hf_x"}}), [W("secret-env", "chief.env.HF_TOKEN")]),
    # labels
    ("label-upper-key", spec(labels={"Team": "nlp"}), [E("bad-label-key", "labels.Team")]),
    ("label-digit-key", spec(labels={"1team": "nlp"}), [E("bad-label-key", "labels.1team")]),
    ("label-empty-key", spec(labels={"": "nlp"}), [E("bad-label-key", "labels")]),
    ("label-upper-value", spec(labels={"team": "NLP"}), [E("bad-label-value", "labels.team")]),
    ("label-dot-value", spec(labels={"version": 1.5}), [E("bad-label-value", "labels.version")]),
    ("label-long-value", spec(labels={"team": "a" * 64}), [E("bad-label-value", "labels.team")]),
    ("label-ok", spec(labels={"team": "nlp", "k" * 63: "", "équipe": "données", "run_id": "a-1"}), []),
    ("labels-too-many", spec(labels={f"k{i}": "v" for i in range(64)}), [E("too-many-labels", "labels")]),
    ("labels-63", spec(labels={f"k{i}": "v" for i in range(63)}), []),
    # submit sets these two itself: a spec's own value would be overwritten
    ("label-idempotency-key", spec(labels={"vxtrain_idempotency_key": "release-1"}),
     [E("reserved-label", "labels.vxtrain_idempotency_key")]),
    ("label-fallback-rung", spec(labels={"team": "nlp", "vxtrain_fallback_rung": "2"}),
     [E("reserved-label", "labels.vxtrain_fallback_rung")]),
    # scheduling
    ("timeout-zero", spec(scheduling={"timeout": 0}), [E("bad-timeout", "scheduling.timeout")]),
    ("timeout-zero-text", spec(scheduling={"timeout": "0s"}), [E("bad-timeout", "scheduling.timeout")]),
    ("max-wait-spot", spec(scheduling={"strategy": "SPOT", "max_wait": "6h"}),
     [W("max-wait-ignored", "scheduling.max_wait")]),
    ("max-wait-default", spec(scheduling={"max_wait": "6h"}), [W("max-wait-ignored", "scheduling.max_wait")]),
    # FLEX_START needs an L4/A100/H100/H200/B200 machine (tests/validation/test_scheduling_rules.py)
    ("max-wait-flex", spec(chief=L4_POOL, scheduling={"strategy": "FLEX_START", "max_wait": "6h", "timeout": "2d"}),
     []),
    ("max-wait-zero-flex", spec(chief=L4_POOL, scheduling={"strategy": "FLEX_START", "max_wait": 0}), []),
    # tensorboard
    ("tensorboard-no-sa", spec(tensorboard="projects/p/locations/us-central1/tensorboards/1"),
     [E("tensorboard-needs-service-account", "tensorboard")]),
    ("tensorboard-sa", spec(tensorboard="projects/p/locations/us-central1/tensorboards/1",
                            service_account="t@p.iam.gserviceaccount.com"), []),
    # evaluators
    ("two-evaluators", spec(evaluators={"replicas": 2, "machine_type": "n1-standard-8", "image": IMAGE}),
     [W("multiple-evaluators", "evaluators.replicas")]),
    ("one-evaluator", spec(evaluators={"machine_type": "n1-standard-8", "image": IMAGE}), []),
]


@pytest.mark.parametrize("data, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule(data: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert found(data) == sorted(expected)


def _message(data: dict[str, Any], code: str) -> str:
    (d,) = [d for d in run(data) if d.code == code]
    return d.message


@pytest.mark.parametrize("data, code, fragments", [
    (spec(chief={"machine_type": "n1-standrad-8"}), "unknown-machine-type",
     ['"n1-standrad-8"', 'did you mean "n1-standard-8"?']),
    (spec(chief={"machine_type": "n1-standard-1"}), "machine-not-offered",
     ['"n1-standard-1" is a Compute Engine type, but Vertex AI training does not offer it',
      'did you mean "n1-standard-4" or "n1-standard-8" or "n1-standard-16"?', "configure-compute", "as of 2026-11-23"]),
    (spec(chief={"machine_type": "a3-edgegpu-8g"}), "machine-not-offered", ['did you mean "a3-highgpu-8g"']),
    (spec(chief={"machine_type": "z9-mega-1"}), "machine-not-offered",
     ['"z9-mega-1" is not one Vertex AI training offers']),
    (spec(chief={"machine_type": "n1-standard-4", "accelerator": {"type": "NVIDIA_TESLA_K80", "count": 1}}),
     "accelerator-not-supported",
     ['Accelerator "NVIDIA_TESLA_K80" is not supported for machine type "n1-standard-4"', "k80-eol",
      "NVIDIA_TESLA_T4"]),
    (spec(chief={"replicas": 2}), "chief-replicas", ["has 2 replicas", "exactly 1 replica in workerPoolSpecs[0]"]),
    (spec(chief={"accelerator": {"type": "NVIDIA_TESLA_V10"}}), "unknown-accelerator",
     ['"NVIDIA_TESLA_V10"', '"NVIDIA_TESLA_V100"']),
    (spec(chief={"machine_type": "n1-standard-4", "accelerator": {"type": "NVIDIA_L4"}}), "accelerator-not-supported",
     ['Accelerator "NVIDIA_L4" is not supported for machine type "n1-standard-4"', "NVIDIA_TESLA_T4 x [1, 2, 4]"]),
    (spec(chief={"machine_type": "n2-standard-8", "accelerator": {"type": "NVIDIA_L4"}}), "accelerator-not-supported",
     ["takes no accelerators"]),
    (spec(chief={"machine_type": "g2-standard-8", "accelerator": {"type": "NVIDIA_L4", "count": 8}}),
     "accelerator-count",
     ['The accelerator count "8" is not allowed. The allowed numbers of accelerator "NVIDIA_L4" to use with '
      'machine type "g2-standard-8" are: [1].']),
    (spec(chief={"machine_type": "n1-highmem-96", "accelerator": {"type": V100, "count": 1}}), "n1-gpu-limits",
     ['"n1-highmem-96" (96 vCPUs, 624 GB)', "at most 12 vCPUs and 76 GB", "use count 8"]),
    (spec(chief={"machine_type": "n1-highmem-64", "accelerator": {"type": "NVIDIA_TESLA_P100", "count": 4}}),
     "n1-gpu-limits", ["at most 64 vCPUs and 208 GB", "no NVIDIA_TESLA_P100 count fits"]),
    (spec(chief={"machine_type": "a2-highgpu-1g"}), "missing-accelerator",
     ["1 x NVIDIA_TESLA_A100", "accelerator: {type: NVIDIA_TESLA_A100, count: 1}"]),
    (spec(**RS_JOB | {"chief": {"machine_type": "n1-standard-8", "image": IMAGE}}), "rs-without-gpus",
     ["but chief has no NVIDIA GPUs"]),
    (spec(chief={"env": {"OPENAI_API_KEY": "sk"}}), "secret-env", ['"OPENAI_API_KEY"', "Secret Manager"]),
    (spec(labels={"team": "NLP"}), "bad-label-value", ['"NLP"', '"L", "N", "P"', "lowercase letters"]),
    (spec(tensorboard="projects/p/locations/l/tensorboards/1"), "tensorboard-needs-service-account",
     ["https://cloud.google.com/vertex-ai/docs/experiments/tensorboard-training"]),
    (spec(scheduling={"strategy": "SPOT", "max_wait": "6h"}), "max-wait-ignored", ["strategy is SPOT", "FLEX_START"]),
])
def test_message_names_value_and_remedy(data: dict[str, Any], code: str, fragments: list[str]) -> None:
    message = _message(data, code)
    for fragment in fragments:
        assert fragment in message


@pytest.mark.parametrize("name, secret", [
    ("DB_PASSWORD", True), ("HF_TOKEN", True), ("OPENAI_API_KEY", True), ("AWS_SECRET_ACCESS_KEY", True),
    ("GITHUB_CREDENTIALS", True), ("PRIVATE_KEY", True), ("APIKEY", True), ("wandb_api_key", True),
    ("MAX_TOKENS", False), ("TOKENIZER_DIR", False), ("TOKEN_FILE", False), ("SECRET_NAME", False),
    ("GOOGLE_APPLICATION_CREDENTIALS", False), ("NCCL_DEBUG", False), ("KEY", False),
])
def test_looks_secret(name: str, secret: bool) -> None:
    assert container_rules.looks_secret(name) is secret


def test_diagnostic_has_line_and_column_of_the_key() -> None:
    data = spec(chief={"machine_type": "n1-standrad-8"})
    native = native_of(data, {("chief", "machine_type"): Position("t.yaml", 3, 3)})
    (d,) = rules.check(model.build(data), native)
    assert (d.file, d.line, d.column, d.path) == ("t.yaml", 3, 3, "chief.machine_type")


def test_native_origin_maps_to_the_written_place() -> None:
    """Converted formats (gcloud, legacy) report where the user wrote the value."""
    data = spec(chief={"machine_type": "n1-standrad-8"})
    native = NativeSpec(data, "gcloud", Document({}, "g.yaml", {}),
                        origin={("chief",): ("workerPoolSpecs", 0, "machineSpec")})
    (d,) = rules.check(model.build(data), native)
    assert d.path == "workerPoolSpecs[0].machineSpec"


# The schema (vxtrain/validation/schema.json) already reports these; the rules must not say them twice.
SCHEMA_CASES = [
    ("display-name-too-long", spec(display_name="x" * 129)),
    ("display-name-empty", spec(display_name="")),
    ("strategy-lowercase", spec(scheduling={"strategy": "spot"})),
    ("strategy-deprecated", spec(scheduling={"strategy": "LOW_COST"})),
    ("timeout-unparseable", spec(scheduling={"timeout": "7 days"})),
    ("worker-replicas-0", spec(workers={"replicas": 0, "machine_type": "n1-standard-8", "image": IMAGE})),
    ("worker-replicas-auto", spec(workers={"replicas": "auto", "machine_type": "n1-standard-8", "image": IMAGE})),
    ("accelerator-count-0", spec(chief={"accelerator": {"type": V100, "count": 0}})),
    ("accelerator-without-type", spec(chief={"accelerator": {"count": 1}})),
    ("package-without-module", spec(chief={"image": None}) | {"chief": {
        "machine_type": "n1-standard-8",
        "python_package": {"executor_image": EXECUTOR, "package_uris": ["gs://b/p.tar.gz"]}}}),
]


@pytest.mark.parametrize("data", [c[1] for c in SCHEMA_CASES], ids=[c[0] for c in SCHEMA_CASES])
def test_schema_covers_and_rules_stay_quiet(data: dict[str, Any]) -> None:
    assert any(d.severity == "error" for d in schema.check(native_of(data)))
    assert run(data) == []


# --- robustness: the lenient model hands the rules anything --------------------------

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 200), st.text(max_size=8),
                     st.sampled_from(["n1-standard-8", "auto", V100, "NVIDIA_L4", "g2-standard-8", "6h", "0"]))
_KEYS = st.sampled_from(["replicas", "machine_type", "accelerator", "type", "count", "image", "env",
                         "python_package", "executor_image", "module", "package_uris", "FOO", "1X"])
def _nest(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=4))


_VALUES = st.recursive(_SCALARS, _nest, max_leaves=12)
_TOP = st.fixed_dictionaries({}, optional={
    k: _VALUES for k in ["display_name", "labels", "scheduling", "defaults", "tensorboard", "service_account",
                         "chief", "workers", "parameter_servers", "reduction_server", "evaluators"]})


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_TOP)
def test_rules_never_crash(data: dict[str, Any]) -> None:
    for d in run(data):
        assert d.severity in ("error", "warning") and d.code and d.message


def test_an_unknown_accelerator_is_never_told_to_try_one_training_refuses() -> None:
    diags = run(spec(chief={"accelerator": {"type": "nvidia_tesla_k8", "count": 1}}))
    (d,) = [d for d in diags if d.code == "unknown-accelerator"]
    assert "did you mean" in d.message and "K80" not in d.message
