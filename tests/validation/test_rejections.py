"""A corpus of real Vertex AI rejections (tests/data/rejections): each file quotes the
server's text and its source in comments, names the diagnostic ``validate`` must give
(``# expect: CODE``, or ``valid`` for a server error that is not the spec's fault) and,
with ``# words:``, the server's words the message must repeat."""
from __future__ import annotations

from pathlib import Path

import pytest

from vxtrain import api

CORPUS = Path(__file__).resolve().parent.parent / "data" / "rejections"
CASES = sorted(CORPUS.glob("*.yaml"))


def _header(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        key, _, value = line[1:].strip().partition(": ")
        if key in ("expect", "words", "source", "server"):
            out[key] = value
    return out


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_server_rejection_is_caught_by_validate(path: Path) -> None:
    header = _header(path)
    assert header.get("source", "").startswith("https://"), f"{path.name}: needs '# source: URL'"
    assert "server" in header, f"{path.name}: needs '# server: TEXT'"
    result = api.check_file(path, api.Options(environ={}))
    errors = [d for d in result.diagnostics if d.severity == "error"]
    if header["expect"] == "valid":
        assert result.valid, [(d.code, d.message) for d in result.diagnostics]
        return
    match = [d for d in errors if d.code == header["expect"]]
    assert match, [(d.code, d.message) for d in result.diagnostics]
    assert match[0].line is not None
    if "words" in header:
        assert header["words"] in match[0].message


def test_corpus_has_the_known_rejections() -> None:
    assert len(CASES) >= 6
