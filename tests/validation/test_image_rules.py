"""build: rules: each mistake a located diagnostic with the fix; a tag-pinned base a warning."""
from __future__ import annotations

from pathlib import Path

import pytest

from vxtrain import api

BASE = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310"
PINNED = f"{BASE}@sha256:{'0' * 64}"


def _diags(tmp_path: Path, build: str, extra: str = "", top: str = "") -> list[tuple[str, str, str, int | None]]:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "requirements.txt").write_text("tinydep==1.0\n")
    spec = tmp_path / "job.yaml"
    spec.write_text(f"display_name: t\n{top}chief:\n  machine_type: n1-standard-4\n{extra}  build:\n{build}")
    return [(d.severity, d.code, d.path, d.line) for d in api.check_file(spec).diagnostics
            if d.code != "price-unknown"]


def test_a_pinned_base_with_a_folder_is_clean(tmp_path: Path) -> None:
    assert _diags(tmp_path, f"    base: {PINNED}\n    source: src\n    requirements: requirements.txt\n") == []


def test_a_base_by_tag_is_warned_to_pin_it(tmp_path: Path) -> None:
    assert _diags(tmp_path, f"    base: {BASE}:latest\n    source: src\n") == [
        ("warning", "base-by-tag", "chief.build.base", 5)]


@pytest.mark.parametrize(("build", "code", "path", "line"), [
    (f"    base: {PINNED}\n    source: nowhere\n", "build-source-missing", "chief.build.source", 6),
    (f"    base: {PINNED}\n    source: src\n    requirements: nope.txt\n", "build-requirements-missing",
     "chief.build.requirements", 7),
    # a name part past 255 bytes: no file can have it (for root too)
    (f"    base: {PINNED}\n    source: src\n    requirements: {'n' * 300}.txt\n", "build-requirements-missing",
     "chief.build.requirements", 7),
    (f"    base: {PINNED}\n    source: {'n' * 300}\n", "build-source-missing", "chief.build.source", 6),
    ("    base: Not/A:Ref:x\n    source: src\n", "build-base", "chief.build.base", 5),
    (f"    base: ubuntu@sha256:{'0' * 64}\n    source: src\n    requirements: requirements.txt\n",
     "build-python", "chief.build", 4),
])
def test_mistakes_are_located_errors(tmp_path: Path, build: str, code: str, path: str, line: int) -> None:
    assert ("error", code, path, line) in _diags(tmp_path, build)


def test_build_python_names_the_python_of_a_base_without_pynnn(tmp_path: Path) -> None:
    build = f"    base: ubuntu@sha256:{'0' * 64}\n    source: src\n    requirements: requirements.txt\n    python: '3.11'\n"
    # the base's own Python is compared at submit (its config's PYTHON_VERSION): a warning says so
    assert _diags(tmp_path, build) == [("warning", "build-python-unchecked", "chief.build.python", 8)]


def test_an_unquoted_python_version_is_a_schema_error(tmp_path: Path) -> None:
    build = f"    base: {PINNED}\n    source: src\n    python: 3.10\n"
    assert [d for d in _diags(tmp_path, build) if d[2] == "chief.build.python" and d[0] == "error"]


def test_build_with_image_is_refused(tmp_path: Path) -> None:
    diags = _diags(tmp_path, f"    base: {PINNED}\n    source: src\n", extra="  image: gcr.io/p/i:1\n")
    assert ("error", "build-and-image", "chief.build", 5) in diags


def test_a_pool_build_replaces_the_image_of_defaults(tmp_path: Path) -> None:
    top = "defaults:\n  image: gcr.io/p/i:1\n"
    assert _diags(tmp_path, f"    base: {PINNED}\n    source: src\n", top=top) == []


def test_a_bad_image_repository_is_located(tmp_path: Path) -> None:
    diags = _diags(tmp_path, f"    base: {PINNED}\n    source: src\n", top="image_repository: Bad Repo\n")
    assert ("error", "image-repository", "image_repository", 2) in diags


def test_a_build_in_defaults_is_located_there(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    spec = tmp_path / "job.yaml"
    spec.write_text(f"display_name: t\ndefaults:\n  build:\n    base: {BASE}:1\n    source: src\n"
                    "chief:\n  machine_type: n1-standard-4\nworkers:\n  replicas: 2\n  machine_type: n1-standard-4\n")
    result = api.check_file(spec)
    warned = [(d.code, d.path) for d in result.diagnostics if d.code == "base-by-tag"]
    assert warned == [("base-by-tag", "defaults.build.base")]
    images = api.plan(spec).images
    assert len(images) == 1 and images[0].roles == ["chief", "workers"]  # one image for both pools


def test_links_left_out_of_the_image_are_named(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "secret").write_text("key")
    (tmp_path / "src" / "key").symlink_to(tmp_path / "secret")
    (tmp_path / "src" / "same.txt").symlink_to("key")  # inside, but to a link that leaves: resolved, left out
    spec = tmp_path / "job.yaml"
    spec.write_text(f"display_name: t\nchief:\n  machine_type: n1-standard-4\n  build:\n    base: {PINNED}\n"
                    "    source: src\n")
    [warned] = [d for d in api.check_file(spec).diagnostics if d.code == "source-links"]
    assert (warned.severity, warned.path, warned.line) == ("warning", "chief.build.source", 6)
    assert f"key -> {tmp_path / 'secret'}" in warned.message and "same.txt -> key" in warned.message
    assert "left out of the image" in warned.message


def test_a_bad_base_is_one_error_not_also_an_unknown_python(tmp_path: Path) -> None:
    diags = _diags(tmp_path, "    base: Not/A:Ref:x\n    source: src\n    requirements: requirements.txt\n")
    assert [d for d in diags if d[0] == "error"] == [("error", "build-base", "chief.build.base", 5)]


def test_an_empty_image_repository_is_one_error(tmp_path: Path) -> None:
    diags = _diags(tmp_path, f"    base: {PINNED}\n    source: src\n", top="image_repository: ''\n")
    assert [d for d in diags if d[0] == "error"] == [("error", "schema-minlength", "image_repository", 2)]


def test_requirements_are_read_up_to_a_bound_not_whole(tmp_path: Path) -> None:
    """A -r naming a data file (2 GB once: a MemoryError) is refused at the key, unread."""
    big = tmp_path / "big.bin"
    with big.open("wb") as f:
        f.truncate(2 << 30)  # sparse: no disk used
    (tmp_path / "reqs.txt").write_text("-r big.bin\n")
    found = _diags(tmp_path, f"    base: {PINNED}\n    source: src\n    requirements: reqs.txt\n")
    assert ("error", "build-requirements-unreadable", "chief.build.requirements", 7) in found
