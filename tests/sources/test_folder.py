"""The files, content hash and name of a source folder (vxtrain.sources.folder); its links and the
private keys it must not carry (issue 34)."""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from tests.sources.folders import (KEY_BODY, SECRETS, private_key, write_bare, write_leaky_hard_links, write_leaky_links,
                                   write_project)
from vxtrain.errors import VxtrainError
from vxtrain.sources import folder as source
from vxtrain.sources.folder import describe, module_file


def test_a_bare_folder_is_generated_and_named_after_itself(bare_source: Path) -> None:
    src = describe(bare_source)
    assert src.kind == "generated" and src.name == "src_bare" and len(src.digest) == source.HASH_LENGTH


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
    assert [str(link.path) for link in source.left_out_links(root)] == ["broken", "keys", "trainer/id_rsa",
                                                                        "trainer/loop"]
    assert {link.path: link.target for link in source.left_out_links(root)}[PurePosixPath("trainer/id_rsa")] \
        == str(outside / "id_rsa")


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


# --- bounds, system folders, entries that cannot be read (issue 27) ------------------------

@pytest.mark.parametrize("folder", ["/", "/usr", "/etc", "/proc/self"])
def test_the_system_folders_are_refused_before_any_walk(folder: str) -> None:
    with pytest.raises(source.SourceError, match="not a source folder") as caught:
        source.survey(Path(folder))
    assert caught.value.code == "source-system-folder"


def test_the_walk_stops_as_soon_as_the_file_bound_is_passed(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(6):
        (tmp_path / f"f{i}.py").write_text("x = 1\n")
    monkeypatch.setenv(source.MAX_FILES_ENV, "3")
    with pytest.raises(source.SourceError, match=r"more than 3 files \(stopped counting at 4 files, 24 bytes\)"
                       r".*VXTRAIN_SOURCE_MAX_FILES=N") as caught:
        describe(tmp_path)
    assert caught.value.code == "source-too-large"
    monkeypatch.setenv(source.MAX_FILES_ENV, "6")  # raised: the folder is packaged
    assert describe(tmp_path).files == 6


def test_the_byte_bound_counts_the_packaged_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "big.bin").write_bytes(b"\0" * 3000)
    monkeypatch.setenv(source.MAX_BYTES_ENV, "2KiB")
    with pytest.raises(source.SourceError, match=r"more than 2\.0 KiB \(stopped counting at 1 file, 2\.9 KiB\).*"
                       r"VXTRAIN_SOURCE_MAX_BYTES=SIZE"):
        describe(tmp_path)
    monkeypatch.setenv(source.MAX_BYTES_ENV, "lots")
    with pytest.raises(VxtrainError, match="VXTRAIN_SOURCE_MAX_BYTES='lots': give a size"):
        describe(tmp_path)


def test_a_folder_that_cannot_be_listed_is_named_even_for_root(tmp_path: Path) -> None:
    """Nested names past PATH_MAX (4096 bytes) cannot be listed by path, whoever runs it:
    the folder is named, never left out of the package (nor a traceback)."""
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(20):  # 20 x 250 bytes: past PATH_MAX
            os.mkdir("d" * 250, dir_fd=fd)
            inner = os.open("d" * 250, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("deep.py", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    finally:
        os.close(fd)
    with pytest.raises(source.SourceError, match="cannot read .*in the source folder") as caught:
        describe(tmp_path)
    assert caught.value.code == "source-unreadable"


@pytest.mark.skipif(os.geteuid() == 0, reason="root enters any folder")
def test_a_subfolder_the_user_cannot_enter_is_named(bare_source: Path) -> None:
    locked = bare_source / "trainer" / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        with pytest.raises(source.SourceError, match="cannot read .*locked"):
            describe(bare_source)
    finally:
        locked.chmod(0o755)


def test_hard_links_to_names_outside_the_folder_are_packaged_and_listed(tmp_path: Path) -> None:
    root, outside = tmp_path / "src", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    os.link(outside / "secret.txt", root / "secret.txt")
    (root / "a.py").write_text("a")
    os.link(root / "a.py", root / "b.py")  # both names inside: not listed
    found = source.survey(root)
    assert [str(f) for f in found.files] == ["a.py", "b.py", "secret.txt"]
    assert [str(f) for f in found.hard_links] == ["secret.txt"] and found.searched and found.links == []


def test_a_hard_link_of_a_name_the_rules_leave_out_is_left_out_too(tmp_path: Path) -> None:
    """trainer/cfg.txt hard-linked to a .vxtrainignored .env.secret, gitcfg.txt to .git/config, key.txt
    to a gitignored id_rsa, conf.yaml into an ignored folder, out.txt to the top build/: each is the
    file its other name is, left out of the files, the size and the hash, and named with that name."""
    root = write_bare(tmp_path / "code")
    (root / ".gitignore").write_text("id_rsa\nsecrets/\n")
    (root / ".vxtrainignore").write_text(".env.secret\n")
    before = source.survey(root)
    links = write_leaky_hard_links(root)
    (root / "cfg-link.txt").symlink_to("trainer/cfg.txt")  # a link to a hard link left out: left out too
    found = source.survey(root)
    assert found.files == before.files and found.size == before.size and found.hard_links == []
    assert [(str(link.path), link.target, link.why) for link in found.links] == [
        ("cfg-link.txt", "trainer/cfg.txt", source.LINK_LEFT_OUT),
        *((name, other, source.LINK_HARD) for name, other in links.items())]
    for rel in found.files:
        assert not any(secret in (root / rel).read_bytes() for secret in SECRETS)


def test_a_hard_link_with_names_inside_and_outside_is_left_out(tmp_path: Path) -> None:
    """A third name outside does not make the one left out inside count less."""
    root = write_bare(tmp_path / "code")
    (root / ".vxtrainignore").write_text(".env\n")
    (root / ".env").write_text("API_KEY=secret\n")
    os.link(root / ".env", root / "trainer" / "cfg.txt")
    os.link(root / ".env", tmp_path / "elsewhere")
    found = source.survey(root)
    assert "trainer/cfg.txt" not in [str(f) for f in found.files] and found.hard_links == []
    assert [(str(link.path), link.target) for link in found.links] == [("trainer/cfg.txt", ".env")]


def test_the_search_for_a_hard_links_other_names_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the walk's bound of names in left-out folders, the search stops and says it did not see
    everything: the file is kept with the warning, not called "outside" for sure."""
    root = tmp_path / "code"
    (root / "data").mkdir(parents=True)
    (root / ".gitignore").write_text("data/\n")
    for i in range(5):
        (root / "data" / f"{i}.bin").write_text("")
    (root / "a.py").write_text("a")
    os.link(root / "a.py", tmp_path / "elsewhere.py")
    assert source.survey(root).searched
    monkeypatch.setenv(source.MAX_FILES_ENV, "4")
    found = source.survey(root)
    assert [str(f) for f in found.hard_links] == ["a.py"] and not found.searched


def test_the_home_folder_itself_is_no_source_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(source.SourceError, match="is your home folder, not a source folder"):
        source.survey(tmp_path)
    (tmp_path / "project").mkdir()
    assert source.survey(tmp_path / "project").files == []


# --- links to what the rules leave out, private keys by content (issue 34) ------------------

def test_a_link_is_packaged_only_when_its_target_is(tmp_path: Path) -> None:
    """A link to a gitignored key, to .git/config, to a .vxtrainignored .env, into an ignored
    folder or the top build/, or to a link to one of them: left out of the files, the hash and
    the sdist, and listed with why; a link to a packaged file is still that file."""
    root = write_bare(tmp_path / "code")
    before = describe(root)
    links = write_leaky_links(root)
    found = source.survey(root)
    assert [str(rel) for rel in found.files] == [".gitignore", ".vxtrainignore", "trainer/__init__.py",
                                                 "trainer/config.yaml", "trainer/task.py", "trainer/util.py"]
    assert [(str(link.path), link.target, link.why) for link in found.links] == [
        (name, os.readlink(root / name), "its target is left out") for name in links]
    for rel in found.files:
        assert not any(secret in (root / rel).read_bytes() for secret in SECRETS)
    with_links = describe(root)
    for name in links:
        (root / name).unlink()
    assert describe(root).digest == with_links.digest  # nothing of theirs is in the hash
    (root / "trainer" / "settings.yaml").symlink_to("config.yaml")
    assert describe(root).files == before.files + 3  # the two ignore files, and a link to a packaged file


def test_a_link_left_out_says_why(tmp_path: Path) -> None:
    root = write_bare(tmp_path / "code")
    (tmp_path / "outside.txt").write_text("x")
    (root / "out").symlink_to(tmp_path / "outside.txt")
    (root / "dir").symlink_to("trainer")
    (root / "broken").symlink_to("nowhere")
    assert [(str(link.path), link.why) for link in source.left_out_links(root)] == [
        ("broken", "broken"), ("dir", "a folder"), ("out", "outside the folder")]


@pytest.mark.parametrize("content", [
    private_key(),
    private_key("RSA PRIVATE KEY"),
    private_key("EC PRIVATE KEY"),
    private_key("PRIVATE KEY"),
    private_key("ENCRYPTED PRIVATE KEY"),
    private_key("RSA PRIVATE KEY", "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00FF\n\n"),
    private_key("PGP PRIVATE KEY BLOCK", "Version: GnuPG v2\n\n"),
    # a server's PEM bundle: its certificate, then its key (as HAProxy and nginx read them)
    f"-----BEGIN CERTIFICATE-----\n{KEY_BODY}\n-----END CERTIFICATE-----\n{private_key('PRIVATE KEY')}",
    # as openssl pkcs12 writes it (Bag Attributes before the block), with Windows line ends
    f"Bag Attributes\n    localKeyID: 01\n{private_key('PRIVATE KEY')}".replace("\n", "\r\n"),
    f'KEY = """\n{private_key()}"""\n',
    # the same key where it does not start a line: pasted into a string, escaped in one, indented in YAML
    f'KEY = """{private_key()}"""\n',
    "KEY = " + json.dumps(private_key("RSA PRIVATE KEY")) + "\n",
    json.dumps({"key": private_key()}).replace("/", "\\/"),
    "tls:\n  key: |\n" + "".join(f"    {line}\n" for line in private_key("EC PRIVATE KEY").splitlines()),
    private_key().replace("\n", "\r"),  # classic Mac OS line ends
], ids=["openssh", "rsa", "ec", "pkcs8", "pkcs8-encrypted", "rsa-encrypted", "pgp", "bundle", "crlf", "in-code",
        "in-a-string", "escaped", "json-slashes", "yaml-indented", "cr"])
def test_a_file_holding_a_private_key_is_refused_whatever_its_name(bare_source: Path, content: str) -> None:
    (bare_source / "server.pem").write_bytes(content.encode())
    with pytest.raises(source.SourceError, match=r"server\.pem \(a private key") as caught:
        source.survey(bare_source)
    assert caught.value.code == "source-credentials" and KEY_BODY not in str(caught.value)
    assert "**/server.pem" in str(caught.value)  # the ignore line that leaves it out
    (bare_source / ".vxtrainignore").write_text("server.pem\n")
    assert "server.pem" not in [str(rel) for rel in source.survey(bare_source).files]


def _notebook(*cells: str, outputs: int = 0) -> str:
    """A Jupyter notebook (nbformat 4, as Jupyter writes it: indent 1, each cell's source a
    list of its lines), its first cell with ``outputs`` bytes of an image's base64 output."""
    image = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBORw0KGgo" * (outputs // 11)}}
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": 1, "metadata": {}, "id": f"c{i}",
                                  "outputs": [image] if i == 0 and outputs else [],
                                  "source": cell.splitlines(keepends=True)} for i, cell in enumerate(cells)],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


@pytest.mark.parametrize("cells", [
    ("import paramiko\n", f"KEY = '''\n{private_key()}'''\n"),
    (f"KEY = '''{private_key('RSA PRIVATE KEY')}'''",),
], ids=["own-lines", "in-a-string"])
@pytest.mark.parametrize("outputs", [0, 200_000], ids=["small", "after-outputs"])
def test_a_notebook_with_a_private_key_in_a_cell_is_refused(bare_source: Path, cells: tuple[str, ...],
                                                            outputs: int) -> None:
    """A key pasted into a notebook's cell: JSON strings, one per line, wherever the cell is
    (a plot's output before it puts it past the first KEY_SCAN_BYTES)."""
    (bare_source / "explore.ipynb").write_text(_notebook(*cells, outputs=outputs))
    with pytest.raises(source.SourceError, match=r"explore\.ipynb \(a private key"):
        source.survey(bare_source)
    (bare_source / "explore.ipynb").write_text(_notebook("import paramiko\n", outputs=outputs))
    assert "explore.ipynb" in [str(rel) for rel in source.survey(bare_source).files]


@pytest.mark.parametrize("content", [
    f"-----BEGIN CERTIFICATE-----\n{KEY_BODY}\n-----END CERTIFICATE-----\n",
    f"-----BEGIN PUBLIC KEY-----\n{KEY_BODY}\n-----END PUBLIC KEY-----\n",
    "Keys start with -----BEGIN OPENSSH PRIVATE KEY----- and end with its END line.\n",
    "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n",  # a placeholder in the docs
    "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END EC PRIVATE KEY-----\n",
    # code that reads keys names both lines, with code between them
    'if line == "-----BEGIN RSA PRIVATE KEY-----":\n    privateKeyBytesFromBase64 = decode(line)\n'
    'elif line == "-----END RSA PRIVATE KEY-----":\n    pass\n',
    'BEGIN, END = "-----BEGIN OPENSSH PRIVATE KEY-----", "-----END OPENSSH PRIVATE KEY-----"\n',
    "Paste it as -----BEGIN PRIVATE KEY----- YOUR_KEY_GOES_HERE -----END PRIVATE KEY-----\n",
], ids=["certificate", "public-key", "prose", "placeholder", "unmatched", "parser", "constants", "instructions"])
def test_certificates_public_keys_and_words_about_keys_are_kept(bare_source: Path, content: str) -> None:
    (bare_source / "server.pem").write_text(content)
    assert "server.pem" in [str(rel) for rel in source.survey(bare_source).files]


def test_a_private_key_is_looked_for_in_a_bounded_prefix_of_each_file(bare_source: Path) -> None:
    """Cheap: the first KEY_SCAN_BYTES of a file; a key further down a large file is not a key file."""
    from vxtrain.sources.credentials import KEY_SCAN_BYTES

    (bare_source / "data.txt").write_text("x" * KEY_SCAN_BYTES + "\n" + private_key())
    assert "data.txt" in [str(rel) for rel in source.survey(bare_source).files]
    (bare_source / "data.txt").write_text("x" * (KEY_SCAN_BYTES - 400) + "\n" + private_key())
    with pytest.raises(source.SourceError, match="data.txt"):
        source.survey(bare_source)
