"""The compiled-validator cache (vxtrain/validation/compiled.py): a hit, a stale key, an
unwritable folder and a corrupt file each give the validator of the schema asked for."""
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

from vxtrain.validation import compiled

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
    """A cache file for ``key`` holding ``code`` (written as compiled.py writes one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"vxtrain-fastjsonschema\n" + key.encode() + b"\n" + marshal.dumps(code))


def _code_of(definition: dict[str, Any]) -> object:
    return compile(fastjsonschema.compile_to_code(definition), "<test>", "exec")


def test_a_miss_compiles_and_writes_the_cache(tmp_path: Path) -> None:
    check = compiled.compile_validator(INTEGER, tmp_path)
    assert _accepts(check, 5) and not _accepts(check, "5")
    assert [p.name for p in tmp_path.iterdir()] == [_file(tmp_path, INTEGER).name]  # no temporary left


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
    assert {p.name for p in tmp_path.iterdir()} == {_file(tmp_path, INTEGER).name, _file(tmp_path, STRING).name}


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
    assert header == compiled.cache_key(INTEGER).encode()  # rewritten


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


def test_validate_writes_the_cache_once_and_reads_it_after(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path)}
    spec = ROOT / "configs" / "examples" / "quickstart.yaml"
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-m", "vxtrain", "validate", str(spec)], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        files = list((tmp_path / "vxtrain").iterdir())
        assert len(files) == 1 and files[0].name.startswith("schema-")
