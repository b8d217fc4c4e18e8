"""A corpus of bad specs (tests/data/bad): each names, in its first line, the code
it must produce and a word its message must contain; all of them are reported
with a position and no traceback, and the folder as a whole exits 1."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vxtrain import api
from vxtrain.cli import main

BAD = Path(__file__).resolve().parent / "data" / "bad"
CASES = sorted(BAD.glob("*.yaml"))


def _expectation(path: Path) -> tuple[str, str | None]:
    words = path.read_text().splitlines()[0].split()
    assert words[:2] == ["#", "expect:"], f"{path.name}: first line must be '# expect: CODE [WORD]'"
    return words[2], (words[3] if len(words) > 3 else None)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_bad_spec_gives_its_diagnostic(path: Path) -> None:
    code, word = _expectation(path)
    result = api.check_file(path)
    assert not result.valid
    match = [d for d in result.diagnostics if d.code == code]
    assert match, [(d.code, d.message) for d in result.diagnostics]
    diag = match[0]
    assert diag.severity == "error"
    assert diag.file == str(path) and diag.line is not None and diag.line >= 1
    if word is not None:
        assert word in diag.message + diag.path


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 20


def test_whole_corpus_through_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(BAD), "--output", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["files"]) == len(CASES)
    assert not any(f["valid"] for f in doc["files"])


def test_unexpected_errors_are_logged_not_shown(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(api, "check_file", broken)  # a bug anywhere in the pipeline
    monkeypatch.setenv("VXTRAIN_LOG_DIR", str(tmp_path))
    assert main(["plan", str(CASES[0])]) == 1
    err = capsys.readouterr().err
    assert "unexpected error: RuntimeError: boom" in err and "Traceback" not in err
    (log,) = tmp_path.glob("vxtrain-error-*.log")
    assert "Traceback" in log.read_text() and "boom" in log.read_text()


def test_an_unwritable_log_folder_still_shows_no_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(api, "check_file", broken)
    missing = tmp_path / "not-there"  # unwritable for root too: it does not exist
    monkeypatch.setenv("VXTRAIN_LOG_DIR", str(missing))
    assert main(["plan", str(CASES[0])]) == 1
    err = capsys.readouterr().err
    assert "unexpected error: RuntimeError: boom" in err and "Traceback" not in err
    assert f"could not be written to {str(missing)!r}" in err and "VXTRAIN_LOG_DIR" in err
