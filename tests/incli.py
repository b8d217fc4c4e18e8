"""``vxtrain`` run in this process, for tests that read its JSON output."""
from __future__ import annotations

import json
from typing import Any

import pytest


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """``vxtrain ARGV`` in process: (exit code, parsed stdout JSON or text, stderr)."""
    from vxtrain.cli import main  # here: the CLI is what the calling test exercises

    code = main(list(argv))
    out, err = capsys.readouterr()
    try:
        return code, json.loads(out), err
    except ValueError:
        return code, out, err
