"""Properties of the whole pipeline (load → normalize → validate → plan → compile)
on random input: it never raises, a spec that is not valid always says why
with a located error, and a valid one always has a compiled job."""
from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vxtrain import api, pipeline
from vxtrain.loading import load_text

# Property tests over many generated documents (about 12 s together): the slow tier.
pytestmark = pytest.mark.slow

# Keys of all three formats, so random documents reach deep into each converter.
_KEYS = ["display_name", "chief", "workers", "parameter_servers", "reduction_server", "evaluators",
         "replicas", "machine_type", "accelerator", "type", "count", "image", "command", "args",
         "env", "defaults", "scheduling", "timeout", "strategy", "labels", "study", "metric",
         "parameters", "max_trials", "parallel_trials", "extra", "python_package", "local",
         "workerPoolSpecs", "machineSpec", "machineType", "replicaCount", "containerSpec",
         "imageUri", "jobSpec", "trainingInput", "scaleTier", "masterType", "workerCount",
         "masterConfig", "acceleratorConfig", "region", "project", "fallback", "xyz"]
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 64), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["auto", "n1-standard-4", "n1-highmem-96", "g2-standard-8", "NVIDIA_TESLA_V100",
                     "NVIDIA_L4", "CUSTOM", "BASIC", "2d", "SPOT", "us-central1", "${X}", "img"]))
def _nest(kids: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.sampled_from(_KEYS), kids, max_size=5))


_TREES = st.recursive(_SCALARS, _nest, max_leaves=25)


def _check(data: Any) -> api.Result:
    text = yaml.safe_dump(data, sort_keys=False)
    document, diags = load_text(text, "random.yaml", environ={})
    if document is None:
        result = api.Result(file="random.yaml", diagnostics=diags)
        assert not result.valid
        return result
    return pipeline.check_document(document, api.Options(environ={}))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(_KEYS), _TREES, max_size=7))
def test_random_documents_never_crash_and_always_say_why(data: dict[str, Any]) -> None:
    result = _check(data)
    if result.valid:
        assert result.custom_job is not None
        assert result.custom_job["jobSpec"]["workerPoolSpecs"]
    else:
        errors = [d for d in result.diagnostics if d.severity == "error"]
        assert errors
        assert all(d.message and d.code and d.code != "internal-error" for d in errors)
        assert result.custom_job is None or any(d.code.startswith("extra") for d in errors)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["chief", "workers", "evaluators"]), st.sampled_from(_KEYS), _SCALARS)
def test_one_wrong_value_in_a_valid_spec_is_located(pool: str, key: str, value: Any) -> None:
    data: dict[str, Any] = {"display_name": "p", "chief": {"machine_type": "n1-standard-4", "image": "i"},
                            "workers": {"replicas": 2, "machine_type": "n1-standard-4", "image": "i"},
                            "evaluators": {"machine_type": "n1-standard-4", "image": "i"}}
    data[pool] = {**data[pool], key: value}
    result = _check(data)
    for d in result.diagnostics:
        assert d.line is not None and d.file == "random.yaml", d
