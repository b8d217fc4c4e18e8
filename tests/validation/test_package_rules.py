"""python_package.source rules: any path a spec can hold gives a located diagnostic."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vxtrain import api

EXECUTOR = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest"


def _codes(tmp_path: Path, source: str) -> list[tuple[str, str, int | None]]:
    spec = tmp_path / "job.yaml"
    spec.write_text("display_name: t\nchief:\n  machine_type: n1-standard-4\n  python_package:\n"
                    f"    executor_image: {EXECUTOR}\n    module: trainer.task\n"
                    f"    source: {json.dumps(source)}\n")
    result = api.check_file(spec)
    return [(d.code, d.path, d.line) for d in result.diagnostics if d.severity == "error"]


@pytest.mark.parametrize("source", ["a\u0000b", "~no-such-user-vxtrain/code"])
def test_an_unusable_source_path_is_a_located_error(tmp_path: Path, source: str) -> None:
    assert _codes(tmp_path, source) == [("package-source-missing", "chief.python_package.source", 7)]


def test_a_missing_source_folder_is_a_located_error(tmp_path: Path) -> None:
    assert _codes(tmp_path, "nowhere") == [("package-source-missing", "chief.python_package.source", 7)]


@pytest.mark.parametrize("image, severity", [
    (EXECUTOR, None),
    ("gcr.io/cloud-aiplatform/training/tf-cpu.2-8:latest", None),
    ("us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8:2024", "warning"),  # Google's, but not as listed
    ("us-docker.pkg.dev/my-project/trainers/tf:1", "error"),
    ("us-docker.pkg.dev/vertex-ai/training-fake/tf-cpu.2-8:latest", "error"),
])
def test_an_executor_image_not_prebuilt_is_refused(tmp_path: Path, image: str, severity: str | None) -> None:
    """The proto: "You must use an image from this list" (PythonPackageSpec.executor_image_uri)."""
    spec = tmp_path / "job.yaml"
    spec.write_text("display_name: t\nchief:\n  machine_type: n1-standard-4\n  python_package:\n"
                    f"    executor_image: {image}\n    module: trainer.task\n"
                    "    package_uris: [gs://b/trainer-0.1.tar.gz]\n")
    result = api.check_file(spec)
    found = [d for d in result.diagnostics if d.code == "package-executor-image"]
    assert [d.severity for d in found] == ([severity] if severity else [])
    if severity == "error":
        assert found[0].message.startswith(
            f"executor_image {image} is not one of Google's prebuilt training images "
            "({us,europe,asia}-docker.pkg.dev/vertex-ai/training/NAME:latest, listed at "
            "https://cloud.google.com/vertex-ai/docs/training/pre-built-containers): "
            "PythonPackageSpec.executorImageUri \"You must use an image from this list\"")
        assert (found[0].path, found[0].line) == ("chief.python_package.executor_image", 5)
        assert result.custom_job is None  # nothing is sent


def test_links_left_out_of_the_package_are_named(tmp_path: Path) -> None:
    (tmp_path / "code" / "trainer").mkdir(parents=True)
    (tmp_path / "code" / "trainer" / "task.py").write_text("")
    (tmp_path / "data").mkdir()
    (tmp_path / "code" / "data").symlink_to(tmp_path / "data")
    spec = tmp_path / "job.yaml"
    spec.write_text("display_name: t\nchief:\n  machine_type: n1-standard-4\n  python_package:\n"
                    f"    executor_image: {EXECUTOR}\n    module: trainer.task\n    source: code\n")
    warned = [(d.severity, d.path, d.line) for d in api.check_file(spec).diagnostics if d.code == "source-links"]
    assert warned == [("warning", "chief.python_package.source", 7)]


def _source_spec(tmp_path: Path, source: str) -> Path:
    spec = tmp_path / "job.yaml"
    spec.write_text("display_name: t\nchief:\n  machine_type: n1-standard-4\n  python_package:\n"
                    f"    executor_image: {EXECUTOR}\n    module: trainer.task\n    source: {source}\n")
    return spec


def test_a_source_past_the_bound_is_an_error_at_its_key_with_the_sizes_and_the_way_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "code" / "trainer").mkdir(parents=True)
    for name in ("task.py", "a.py", "b.py"):
        (tmp_path / "code" / "trainer" / name).write_text("")
    monkeypatch.setenv("VXTRAIN_SOURCE_MAX_FILES", "2")
    result = api.check_file(_source_spec(tmp_path, "code"))
    [found] = [d for d in result.diagnostics if d.code == "source-too-large"]
    assert (found.severity, found.path, found.line) == ("error", "chief.python_package.source", 7)
    assert "more than 2 files (stopped counting at 3 files" in found.message
    assert "VXTRAIN_SOURCE_MAX_FILES" in found.message and result.custom_job is None


def test_a_file_hard_linked_from_outside_is_packaged_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "code" / "trainer").mkdir(parents=True)
    (tmp_path / "code" / "trainer" / "task.py").write_text("")
    (tmp_path / "notes.txt").write_text("n")
    (tmp_path / "code" / "notes.txt").hardlink_to(tmp_path / "notes.txt")
    result = api.check_file(_source_spec(tmp_path, "code"))
    [found] = [d for d in result.diagnostics if d.code == "source-hard-links"]
    assert (found.severity, found.path, found.line) == ("warning", "chief.python_package.source", 7)
    assert "notes.txt" in found.message and result.valid
    assert "hard-linked to another name outside the folder" in found.message
