"""A source folder's ``.gitignore``/``.vxtrainignore`` (images and packages alike), checked
against git itself: the files packaged are those ``git ls-files --others --exclude-standard``
lists, for fixed cases and generated ones; the exec bit is in the hash; credentials refused."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vxtrain.packaging.build import build_sdist
from vxtrain.sources.folder import SourceError, describe, survey

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


def _git_keeps(root: Path) -> list[str]:
    """What git lists as untracked and not ignored under ``root`` (a new repository), with
    the folder's own ignore files only (no global excludes)."""
    env = {**os.environ, "HOME": str(root), "XDG_CONFIG_HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run([GIT or "git", "init", "-q", str(root)], check=True, env=env)
    out = subprocess.run([GIT or "git", "-C", str(root), "-c", "core.excludesFile=", "ls-files", "--others",
                          "--exclude-standard", "-z"], check=True, env=env, capture_output=True).stdout
    shutil.rmtree(root / ".git")
    return sorted(name for name in out.decode().split("\0") if name)


def _ours(root: Path) -> list[str]:
    return sorted(str(rel) for rel in survey(root).files)


def _lay_out(root: Path, files: list[str], ignores: dict[str, str]) -> None:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    for folder, text in ignores.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / ".gitignore").write_text(text)


FILES = ["a.log", "keep.log", "src/a.log", "src/m.py", "src/deep/x.txt", "src/deep/y.tmp", "out/r.txt",
         "docs/out/r.txt", "notes.md", "src/notes.md"]


@needs_git
@pytest.mark.parametrize("ignores", [
    {"": "*.log\n!keep.log\n"},
    {"": "/out/\n", "src": "*.md\n"},
    {"": "out\n!docs/out\n"},  # a folder left out cannot be put back, but another of that name can
    {"": "**/deep/*.tmp\nnotes.md\n", "src": "!notes.md\n"},  # the deeper file decides
    {"": "src/\n!src/m.py\n"},  # nothing under a folder left out comes back
    {"": "*\n!*/\n!*.py\n"},
    {"src/deep": "*\n"},
    {"": "deep/\n!src/**/\n"},  # pathspec reads a/**/ as a/ (a itself too): git's meaning is kept
    {"src": "deep/**\n!**/*.txt\n"},  # deep/** is what is in deep, not deep
    {"": "!\n[z-a]\n*.log\nnotes.md\\\n\\\n"},  # lines git cannot read are passed over; the rest count
])
def test_the_files_kept_are_the_ones_git_keeps(tmp_path: Path, ignores: dict[str, str]) -> None:
    _lay_out(tmp_path, FILES, ignores)
    assert _ours(tmp_path) == _git_keeps(tmp_path)


_PATTERNS = st.sampled_from(["*.log", "!keep.log", "/out/", "out", "!docs/out", "src/", "!src/m.py", "*.md",
                             "!notes.md", "deep/", "**/x.txt", "/a.log", "src/*.log", "*.t?p", "!*.py", "*",
                             "!*/", "d*/", "[ab].log", "src/**", "**/deep", "!src/**/", "/src/deep/", "*/",
                             "deep/**", "!**/*.txt", "/*.md", "**", "!deep/**/", "**/deep/", "!src/*/", "!", "[z-a]"])


@pytest.mark.slow
@needs_git
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(top=st.lists(_PATTERNS, max_size=5), nested=st.lists(_PATTERNS, max_size=3))
def test_generated_ignore_files_keep_what_git_keeps(tmp_path: Path, top: list[str], nested: list[str]) -> None:
    root = tmp_path / f"case{abs(hash((tuple(top), tuple(nested))))}"
    _lay_out(root, FILES, {"": "\n".join(top) + "\n", "src": "\n".join(nested) + "\n"})
    try:
        assert _ours(root) == _git_keeps(root)
    finally:
        shutil.rmtree(root)


def _git_keeps_under(top: Path, sub: str) -> list[str]:
    """What git keeps under ``top/sub`` (``top`` a new repository), relative to ``sub``."""
    return sorted(name.removeprefix(sub + "/") for name in _git_keeps(top) if name.startswith(sub + "/"))


@needs_git
@pytest.mark.parametrize("ignores", [
    {"": ".env\n*.log\n!keep.log\n"},  # the repository's own .gitignore, the source a folder in it
    {"": "*.log\n", "proj": "!src/a.log\n"},  # the deeper file decides, above the source too
    {"": "/src/deep/\n/deep/\n", "proj/src": "*.md\n"},  # anchored: to the folder that holds the file
    {"": "proj/src/deep/*.tmp\n**/notes.md\n", "proj/src/deep": "!y.tmp\n"},
])
def test_ignore_files_above_the_source_count_as_git_counts_them(tmp_path: Path, ignores: dict[str, str]) -> None:
    top = tmp_path / "repo"
    env = [".env"] if ".env" in ignores[""] else []  # a credential: refused unless left out
    _lay_out(top / "proj" / "src", [f.removeprefix("src/") for f in FILES] + env, {})
    _lay_out(top, [], ignores)
    (top / ".git").mkdir()  # a work tree: the ignore files above the source are read up to here
    ours = _ours(top / "proj" / "src")
    shutil.rmtree(top / ".git")
    assert ours == _git_keeps_under(top, "proj/src")


def test_ignore_files_above_count_only_inside_a_git_work_tree_and_never_drop_the_source(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "task.py").write_text("")
    (tmp_path / "src" / "a.log").write_text("")
    (tmp_path / ".gitignore").write_text("*.log\nsrc/\n")
    assert _ours(tmp_path / "src") == ["a.log", "task.py"]  # no .git above: not git's ignore file
    (tmp_path / ".git").mkdir()
    assert _ours(tmp_path / "src") == ["task.py"]  # src/ itself is named by the spec on purpose
    (tmp_path / "src" / ".git").mkdir()  # a repository of its own: its top is the source
    assert _ours(tmp_path / "src") == ["a.log", "task.py"]


@pytest.mark.slow
def test_a_package_leaves_out_what_its_ignore_files_say(tmp_path: Path) -> None:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "task.py").write_text("print('ok')\n")
    (tmp_path / "trainer" / "scratch.ipynb").write_text("{}")
    (tmp_path / ".vxtrainignore").write_text("*.ipynb\n")
    before = describe(tmp_path)
    (tmp_path / "trainer" / "scratch.ipynb").write_text('{"cells": []}')
    assert describe(tmp_path).digest == before.digest and before.files == 2
    sdist = build_sdist(before, tmp_path.parent / "dist")
    import tarfile

    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    assert any(n.endswith("trainer/task.py") for n in names)
    assert not any(n.endswith(".ipynb") for n in names)


def test_the_exec_bit_is_in_a_package_s_hash(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text("print('ok')\n")
    os.chmod(tmp_path / "run.py", 0o644)
    plain = describe(tmp_path).digest
    os.chmod(tmp_path / "run.py", 0o755)
    assert describe(tmp_path).digest != plain
    os.chmod(tmp_path / "run.py", 0o664)  # the group's bits are not the packaged mode's
    assert describe(tmp_path).digest == plain


def test_a_package_folder_with_a_netrc_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "task.py").write_text("")
    (tmp_path / ".netrc").write_text("machine example.com password hunter2\n")
    with pytest.raises(SourceError) as caught:
        describe(tmp_path)
    assert caught.value.code == "source-credentials" and ".netrc" in str(caught.value)
    assert "hunter2" not in str(caught.value)
    (tmp_path / ".gitignore").write_text(".netrc\n")
    assert describe(tmp_path).files == 2
