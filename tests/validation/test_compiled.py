"""The compiled-validator cache (vxtrain/validation/compiled.py): a hit, a stale key, an
unwritable folder and a corrupt file each give the validator of the schema asked for; a file
not signed with the folder's key, or in a folder that is not the user's own, is never run
(issue 34, 2b: another local user's code object ran as root)."""
from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import fastjsonschema
import pytest

from tests.otheruser import as_nobody, need_another_user, shared_folder, write_as_nobody
from vxtrain import private
from vxtrain.validation import compiled, schema

ROOT = Path(__file__).resolve().parents[2]
INTEGER = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "integer"}
STRING = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"}


def _accepts(check: Any, value: Any) -> bool:
    try:
        check(value)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def _file(folder: Path, definition: dict[str, Any]) -> Path:
    return folder / f"schema-{compiled.cache_key(definition)}.marshal"


def _plant(path: Path, key: str, code: object) -> None:
    """A cache file for ``key`` holding ``code`` (written as compiled.py writes one: signed with
    the folder's key)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    header, body = b"vxtrain-fastjsonschema\n" + key.encode() + b"\n", marshal.dumps(code)
    signing = private.folder_key(path.parent)
    assert signing is not None
    path.write_bytes(header + private.mac(signing, header + body) + body)
    path.chmod(0o600)


def _unsigned(key: str, code: object) -> bytes:
    """A cache file's bytes for ``key`` holding ``code`` as anyone could write them: the header
    and the marshalled code (the whole of a cache file before files were signed)."""
    return b"vxtrain-fastjsonschema\n" + key.encode() + b"\n" + marshal.dumps(code)


def _payload(marker: Path) -> object:
    """The code another user plants: it writes ``marker`` when run, and passes every spec."""
    return compile(f"open({str(marker)!r}, 'w').write('ran as uid ' + str(__import__('os').geteuid()))\n"
                   "def validate(data, custom_formats={}, name_prefix=None):\n    return data\n", "<planted>", "exec")


def _native_key() -> str:
    """The key validate's cache file of the native schema is named by (as schema._fast_check asks)."""
    draft7 = json.loads(json.dumps(schema.schema()))
    draft7["$schema"] = "http://json-schema.org/draft-07/schema#"
    return compiled.cache_key(draft7)


def _cached(folder: Path) -> list[str]:
    """The cache files in ``folder`` (not its key)."""
    return sorted(p.name for p in folder.iterdir() if p.name != private.KEY_FILE)


def _code_of(definition: dict[str, Any]) -> object:
    return compile(fastjsonschema.compile_to_code(definition), "<test>", "exec")


def test_a_miss_compiles_and_writes_the_cache(tmp_path: Path) -> None:
    check = compiled.compile_validator(INTEGER, tmp_path)
    assert _accepts(check, 5) and not _accepts(check, "5")
    assert _cached(tmp_path) == [_file(tmp_path, INTEGER).name]  # no temporary left


def test_a_hit_runs_the_cached_code(tmp_path: Path) -> None:
    # The file under INTEGER's key holds STRING's validator: what comes back is what was cached.
    _plant(_file(tmp_path, INTEGER), compiled.cache_key(INTEGER), _code_of(STRING))
    check = compiled.compile_validator(INTEGER, tmp_path)
    assert _accepts(check, "5") and not _accepts(check, 5)


def test_the_same_schema_twice_reads_what_was_written(tmp_path: Path) -> None:
    compiled.compile_validator(INTEGER, tmp_path)
    written = _file(tmp_path, INTEGER).stat()
    check = compiled.compile_validator(INTEGER, tmp_path)
    again = _file(tmp_path, INTEGER).stat()
    assert (again.st_ino, again.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
    assert _accepts(check, 5) and not _accepts(check, "5")


def test_a_changed_schema_never_reads_the_old_file(tmp_path: Path) -> None:
    compiled.compile_validator(INTEGER, tmp_path)
    check = compiled.compile_validator(STRING, tmp_path)
    assert _accepts(check, "5") and not _accepts(check, 5)
    assert _cached(tmp_path) == sorted([_file(tmp_path, INTEGER).name, _file(tmp_path, STRING).name])


def test_the_key_follows_the_schema_fastjsonschema_and_python() -> None:
    assert compiled.cache_key(INTEGER) == compiled.cache_key(json.loads(json.dumps(INTEGER)))
    assert compiled.cache_key(INTEGER) != compiled.cache_key(STRING)
    assert compiled.cache_key({**INTEGER, "minimum": 1}) != compiled.cache_key(INTEGER)


def test_a_file_whose_header_names_another_key_is_not_used(tmp_path: Path) -> None:
    # A stale file under the right name (say, copied by hand): its header says whose it is.
    _plant(_file(tmp_path, INTEGER), compiled.cache_key(STRING), _code_of(STRING))
    check = compiled.compile_validator(INTEGER, tmp_path)
    assert _accepts(check, 5) and not _accepts(check, "5")
    assert compiled.compile_validator(INTEGER, tmp_path) is not None
    header = _file(tmp_path, INTEGER).read_bytes().split(b"\n")[1]
    assert header.startswith(compiled.cache_key(INTEGER).encode())  # rewritten


@pytest.mark.parametrize("content", [
    b"",                                                    # empty
    b"garbage",                                             # no header
    b"vxtrain-fastjsonschema\n{key}\n",                     # header, no code
    b"vxtrain-fastjsonschema\n{key}\n\xff\x00\x13garbage",  # header, bytes marshal refuses
    b"vxtrain-fastjsonschema\n{key}\n" + marshal.dumps(12),  # header, not a code object
    b"vxtrain-fastjsonschema\n{key}\n" + marshal.dumps(compile("raise OSError('x')", "<t>", "exec")),
    b"vxtrain-fastjsonschema\n{key}\n" + marshal.dumps(compile("x = 1", "<t>", "exec")),  # no validator
])
def test_a_corrupt_file_is_compiled_again_and_replaced(tmp_path: Path, content: bytes) -> None:
    path = _file(tmp_path, INTEGER)
    path.write_bytes(content.replace(b"{key}", compiled.cache_key(INTEGER).encode()))
    check = compiled.compile_validator(INTEGER, tmp_path)
    assert _accepts(check, 5) and not _accepts(check, "5")
    assert compiled.compile_validator(INTEGER, tmp_path) is not None
    assert path.read_bytes() != content


def test_an_unwritable_folder_compiles_in_memory(tmp_path: Path) -> None:
    # A file where the folder should be: not writable, whoever runs the tests (root included).
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    for folder in (blocked, blocked / "vxtrain"):
        check = compiled.compile_validator(INTEGER, folder)
        assert _accepts(check, 5) and not _accepts(check, "5")
    assert blocked.read_text() == ""


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_compiles_in_memory(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        check = compiled.compile_validator(INTEGER, folder)
        assert _accepts(check, 5) and list(folder.iterdir()) == []
    finally:
        folder.chmod(0o700)


def test_the_cache_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compiled.cache_dir() == tmp_path / "vxtrain"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for unset in ("", "relative/cache"):
        monkeypatch.setenv("XDG_CACHE_HOME", unset)
        assert compiled.cache_dir() == tmp_path / "home" / ".cache" / "vxtrain"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert compiled.cache_dir() == tmp_path / "home" / ".cache" / "vxtrain"


@pytest.mark.slow
def test_validate_writes_the_cache_once_and_reads_it_after(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path)}
    spec = ROOT / "configs" / "examples" / "quickstart.yaml"
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-m", "vxtrain", "validate", str(spec)], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        files = _cached(tmp_path / "vxtrain")
        assert len(files) == 1 and files[0].startswith("schema-")


# --- a cache nobody else can write (issue 34, 2b) -------------------------------------------

def test_an_unsigned_file_is_never_run(tmp_path: Path) -> None:
    # What anyone could write under the right name: the header and a code object, no signature.
    marker = tmp_path / "ran"
    compiled.compile_validator(STRING, tmp_path)  # the folder and its key exist
    path = _file(tmp_path, INTEGER)
    path.write_bytes(_unsigned(compiled.cache_key(INTEGER), _payload(marker)))
    check = compiled.compile_validator(INTEGER, tmp_path)
    assert not marker.exists()
    assert _accepts(check, 5) and not _accepts(check, "5")
    assert compiled.compile_validator(INTEGER, tmp_path) is not None and not marker.exists()  # replaced, signed


def test_a_file_signed_with_another_folders_key_is_not_run(tmp_path: Path) -> None:
    # A cache file copied from another machine or user: signed, but not with this folder's key.
    other, mine, marker = tmp_path / "other", tmp_path / "mine", tmp_path / "ran"
    _plant(_file(other, INTEGER), compiled.cache_key(INTEGER), _payload(marker))
    compiled.compile_validator(STRING, mine)
    _file(mine, INTEGER).write_bytes(_file(other, INTEGER).read_bytes())
    check = compiled.compile_validator(INTEGER, mine)
    assert not marker.exists() and not _accepts(check, "5")


def test_a_folder_others_can_write_is_not_used_and_said_once(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # As `validate` under `umask 000` left it: anyone may have put anything in it.
    folder, marker = tmp_path / "open", tmp_path / "ran"
    folder.mkdir()
    folder.chmod(0o777)
    planted = _unsigned(compiled.cache_key(INTEGER), _payload(marker))
    _file(folder, INTEGER).write_bytes(planted)
    for _ in range(2):
        check = compiled.compile_validator(INTEGER, folder)
        assert _accepts(check, 5) and not _accepts(check, "5")
    assert not marker.exists()
    assert _file(folder, INTEGER).read_bytes() == planted and not (folder / private.KEY_FILE).exists()  # none written
    err = capsys.readouterr().err
    assert err.count("warning: the compiled-schema cache in") == 1, err
    assert f"{folder} is not used: it is open to other users (mode 0777)" in err and "remove it" in err


def test_missing_folders_are_made_private_whatever_the_umask(tmp_path: Path) -> None:
    folder = tmp_path / "xdg" / "deeper" / "vxtrain"
    old = os.umask(0)
    try:
        compiled.compile_validator(INTEGER, folder)
    finally:
        os.umask(old)
    for made in (tmp_path / "xdg", tmp_path / "xdg" / "deeper", folder):
        assert oct(made.stat().st_mode & 0o777) == oct(0o700), made
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in folder.iterdir()} == {
        private.KEY_FILE: oct(0o600), _file(folder, INTEGER).name: oct(0o600)}


def test_a_folder_others_may_only_read_is_made_private_and_used(tmp_path: Path) -> None:
    # mkdir under the usual umask 022 (vxtrain's own folders before they were checked): nobody
    # else could write into it, so what is there is still used, and the folder is closed.
    folder = tmp_path / "vxtrain"
    _plant(_file(folder, INTEGER), compiled.cache_key(INTEGER), _code_of(STRING))
    folder.chmod(0o755)
    check = compiled.compile_validator(INTEGER, folder)
    assert _accepts(check, "5")  # the cached file was read
    assert folder.stat().st_mode & 0o777 == 0o700


def test_a_folder_under_another_users_folder_is_not_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `su` without `-` keeps the caller's XDG_CACHE_HOME: whoever owns a folder above can put
    # another vxtrain folder in the place of this one, between any two checks.
    need_another_user()
    theirs = tmp_path / "theirs"
    folder = theirs / ".cache" / "vxtrain"
    _plant(_file(folder, INTEGER), compiled.cache_key(INTEGER), _code_of(STRING))
    os.chown(theirs, 65534, 65534)
    check = compiled.compile_validator(INTEGER, folder)
    assert _accepts(check, 5) and not _accepts(check, "5")  # compiled, not read
    assert f"{theirs} belongs to another user (uid 65534)" in capsys.readouterr().err


# The attack as it was found, with a real second user (nobody, under setpriv) and real
# `vxtrain validate` processes run by this one (root).

def _validate(spec: Path, xdg: Path, umask: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(xdg)}
    return subprocess.run([sys.executable, "-m", "vxtrain", "validate", str(spec)], env=env, capture_output=True,
                          text=True, timeout=120, umask=-1 if umask is None else umask)


def _spec_with_an_unknown_key(folder: Path) -> Path:
    spec = folder / "bad.yaml"
    spec.write_text((ROOT / "configs" / "examples" / "quickstart.yaml").read_text() + "bogus_key: 1\n")
    return spec


@pytest.mark.slow
def test_validate_under_umask_000_makes_a_cache_folder_nobody_else_can_write() -> None:
    need_another_user()
    with shared_folder() as base:
        xdg = base / "xdg"
        proc = _validate(ROOT / "configs" / "examples" / "quickstart.yaml", xdg, umask=0)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert (xdg / "vxtrain").stat().st_mode & 0o777 == 0o700 and xdg.stat().st_mode & 0o777 == 0o700
        planted = xdg / "vxtrain" / f"schema-{_native_key()}.marshal"
        before = planted.read_bytes()
        assert write_as_nobody(planted, b"x").returncode != 0  # refused: nobody cannot even reach it
        assert as_nobody(["sh", "-c", f"ls {xdg}/vxtrain"]).returncode != 0
        assert planted.read_bytes() == before


@pytest.mark.slow
def test_a_code_object_another_user_put_in_an_open_cache_folder_is_never_run() -> None:
    need_another_user()
    with shared_folder() as base:
        folder, marker = base / "xdg" / "vxtrain", base / "ran"
        folder.mkdir(parents=True)
        folder.chmod(0o777)  # as `validate` under `umask 000` made it
        key = _native_key()
        put = write_as_nobody(folder / f"schema-{key}.marshal", _unsigned(key, _payload(marker)))
        assert put.returncode == 0, put.stderr
        proc = _validate(_spec_with_an_unknown_key(base), base / "xdg")
        assert not marker.exists(), marker.read_text()
        assert proc.returncode == 1 and "unknown key 'bogus_key'" in proc.stdout, proc.stdout + proc.stderr
        assert proc.stderr.count("warning: the compiled-schema cache in") == 1, proc.stderr
        assert "(mode 0777)" in proc.stderr


@pytest.mark.slow
def test_a_cache_folder_another_user_owns_is_never_read() -> None:
    need_another_user()
    with shared_folder() as base:
        home, marker = base / "home", base / "ran"
        home.mkdir()
        os.chown(home, 65534, 65534)
        made = as_nobody(["sh", "-c", f"umask 077; mkdir -p {home}/.cache/vxtrain"])
        assert made.returncode == 0, made.stderr
        key = _native_key()
        planted = home / ".cache" / "vxtrain" / f"schema-{key}.marshal"
        put = write_as_nobody(planted, _unsigned(key, _payload(marker)))
        assert put.returncode == 0, put.stderr
        proc = _validate(_spec_with_an_unknown_key(base), home / ".cache")
        assert not marker.exists(), marker.read_text()
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "belongs to another user (uid 65534)" in proc.stderr, proc.stderr
