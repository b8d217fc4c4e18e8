"""The content hash, name and URI of a source folder (vxtrain.packaging.source)."""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from tests.packaging.conftest import write_bare, write_project
from vxtrain.errors import VxtrainError
from vxtrain.packaging import source
from vxtrain.packaging.source import describe, module_file, package_uri


def test_uri_is_content_addressed_under_the_staging_bucket(bare_source: Path) -> None:
    src = describe(bare_source)
    assert src.kind == "generated" and src.name == "src_bare" and len(src.digest) == source.HASH_LENGTH
    assert src.uri("gs://b/some/prefix/") == f"gs://b/some/prefix/vxtrain-packages/src_bare-{src.digest}.tar.gz"
    assert package_uri("gs://b", "trainer", "abc") == "gs://b/vxtrain-packages/trainer-abc.tar.gz"


def test_project_name_comes_from_pyproject_normalized(project_source: Path) -> None:
    src = describe(project_source)
    assert (src.kind, src.name) == ("project", "my_trainer")


@pytest.mark.parametrize("toml", ['project = "x"', "[project]\nname = 3", "not toml ["])
def test_a_pyproject_without_a_usable_name_falls_back_to_the_folder(tmp_path: Path, toml: str) -> None:
    root = write_bare(tmp_path / "code")
    (root / "pyproject.toml").write_text(toml)
    assert describe(root).name == "code"


def test_same_tree_same_hash_wherever_it_is_and_however_it_was_written(tmp_path: Path) -> None:
    a = write_bare(tmp_path / "a" / "code")
    b = tmp_path / "b" / "code"
    # the same files written in the opposite order (directory listing order differs)
    for rel in sorted((p.relative_to(a) for p in a.rglob("*") if p.is_file()), reverse=True):
        (b / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(a / rel, b / rel)
    assert describe(a).digest == describe(b).digest


def test_hash_does_not_depend_on_listing_order(bare_source: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = describe(bare_source).digest
    real_walk = os.walk

    def reversed_walk(top: Any, *args: Any, **kwargs: Any) -> Iterator[tuple[str, list[str], list[str]]]:
        for dirpath, dirnames, filenames in real_walk(top, *args, **kwargs):
            dirnames.reverse()
            yield dirpath, dirnames, filenames[::-1]

    monkeypatch.setattr(source.os, "walk", reversed_walk)
    assert describe(bare_source).digest == before


@pytest.mark.parametrize("junk", [
    ".git/objects/ab", "trainer/__pycache__/task.cpython-311.pyc", "trainer/stale.pyc",
    ".venv/lib/site.py", "venv/bin/python", "myenv/pyvenv.cfg", "build/lib/trainer/task.py",
    "dist/trainer-0.0.0.tar.gz", "trainer.egg-info/PKG-INFO", "trainer/.pytest_cache/v",
])
def test_excluded_files_do_not_change_the_hash(bare_source: Path, junk: str) -> None:
    before = describe(bare_source)
    (bare_source / junk).parent.mkdir(parents=True, exist_ok=True)
    (bare_source / junk).write_text("noise")
    after = describe(bare_source)
    assert (after.digest, after.files) == (before.digest, before.files)


def test_build_and_dist_are_code_below_the_top(bare_source: Path) -> None:
    before = describe(bare_source).digest
    (bare_source / "trainer" / "build").mkdir()
    (bare_source / "trainer" / "build" / "graph.py").write_text("X = 1\n")
    assert describe(bare_source).digest != before


def test_describe_once_hashes_a_folder_once_per_check(bare_source: Path, tmp_path: Path) -> None:
    """One check (a spec and its fallback rungs) hashes each folder once: a second ask gets
    the first answer, even after the files changed; another check hashes them again."""
    described: dict[Path, source.Source] = {}
    first = source.describe_once(bare_source, described)
    (bare_source / "trainer" / "util.py").write_text("VALUE = 43\n")
    assert source.describe_once(bare_source, described) is first
    assert source.describe_once(bare_source, {}).digest != first.digest
    other = tmp_path / "other"
    shutil.copytree(bare_source, other)
    assert source.describe_once(other, described).path == other.resolve() and len(described) == 2


@pytest.mark.parametrize("change", ["edit", "add", "rename", "move-bytes"])
def test_a_changed_tree_gives_a_new_hash(bare_source: Path, change: str) -> None:
    before = describe(bare_source).digest
    pkg = bare_source / "trainer"
    if change == "edit":
        (pkg / "util.py").write_text("VALUE = 43\n")
    elif change == "add":
        (pkg / "extra.txt").write_text("")  # even an empty file counts
    elif change == "rename":
        (pkg / "config.yaml").rename(pkg / "config.yml")
    else:  # the same bytes in total, split differently between two files
        (pkg / "__init__.py").write_text("VALUE")
        (pkg / "util.py").write_text(" = 42\n")
    assert describe(bare_source).digest != before


def test_module_file_finds_modules_packages_and_the_src_layout(tmp_path: Path) -> None:
    write_bare(tmp_path)
    assert module_file(tmp_path, "trainer.task") == tmp_path / "trainer" / "task.py"
    assert module_file(tmp_path, "trainer.nope") is None
    assert module_file(tmp_path, "trainer..task") is None
    (tmp_path / "src" / "app").mkdir(parents=True)
    (tmp_path / "src" / "app" / "__main__.py").write_text("")
    assert module_file(tmp_path, "app") == tmp_path / "src" / "app" / "__main__.py"


def test_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        describe(tmp_path / "nope")


def test_links_outside_the_folder_to_folders_or_nowhere_are_left_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "keys").mkdir(parents=True)
    (outside / "id_rsa").write_text("secret")
    (outside / "keys" / "k").write_text("secret")
    root = write_bare(tmp_path / "code")
    before = describe(root)
    (root / "trainer" / "id_rsa").symlink_to(outside / "id_rsa")
    (root / "keys").symlink_to(outside / "keys")
    (root / "trainer" / "loop").symlink_to(root)  # a link to an ancestor: never followed
    (root / "broken").symlink_to(tmp_path / "nowhere")
    after = describe(root)
    assert list(source.iter_files(root)) == list(source.iter_files(tmp_path / "code" / ".." / "code"))
    assert (after.digest, after.files) == (before.digest, before.files)
    assert [str(rel) for rel, _ in source.left_out_links(root)] == ["broken", "keys", "trainer/id_rsa", "trainer/loop"]
    assert dict(source.left_out_links(root))[PurePosixPath("trainer/id_rsa")] == str(outside / "id_rsa")


def test_a_link_to_a_file_inside_the_folder_counts_as_that_file(bare_source: Path) -> None:
    before = describe(bare_source)
    (bare_source / "trainer" / "settings.yaml").symlink_to("config.yaml")  # relative, as git checks links out
    after = describe(bare_source)
    assert after.files == before.files + 1 and after.digest != before.digest
    assert source.left_out_links(bare_source) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_named_not_an_unexpected_error(bare_source: Path) -> None:
    locked = bare_source / "trainer" / "locked.bin"
    locked.write_bytes(b"x")
    locked.chmod(0)
    try:
        with pytest.raises(VxtrainError, match="cannot read .*locked.bin.*make it readable"):
            describe(bare_source)
    finally:
        locked.chmod(0o644)
