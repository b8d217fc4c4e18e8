"""The submission wing's house rules, read from its source: no function takes more than 8
parameters (a session and small value objects carry the rest), and no ``say`` callback is
threaded through it (its lines go to the ``vxtrain.submission`` logger)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vxtrain import submission
from vxtrain.submission.decide import STRATEGIES
from vxtrain.validation.schema import schema

WING = Path(submission.__file__).resolve().parent
#: The most parameters a function of the wing takes (``self`` not counted).
MOST = 8


def functions() -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    out = []
    for path in sorted(WING.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                out.append((f"{path.name}:{node.lineno} {node.name}", node))
    return out


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = node.args
    names = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


@pytest.mark.parametrize(("where", "node"), functions(), ids=lambda v: v if isinstance(v, str) else "")
def test_no_function_takes_more_than_eight_parameters_nor_a_say(where: str, node: ast.FunctionDef) -> None:
    names = parameters(node)
    assert len(names) <= MOST, f"{where} takes {len(names)}: {names}"
    assert "say" not in names, f"{where} takes a say callback: log to the session's logger"


def test_the_exports_are_the_few_callers_need() -> None:
    assert len(submission.__all__) <= 16


def test_the_strategy_table_is_the_schemas_enum() -> None:
    strategy = schema()["properties"]["recovery"]["properties"]["strategy"]
    assert sorted(STRATEGIES) == sorted(strategy["enum"])
