"""Every diagnostic code vxtrain can emit is in docs/validation.md ("Every code").

The codes are read from the source, not listed here: each call that makes a diagnostic
with a literal code (``error("code", …)``, ``warning``, the loader's ``_diag``/``_fatal``,
``_note(problems, "code", …)``, ``SourceError(…, "code")``, ``source_folder_checked``'s
code argument, submit's ``BasePythonError("code", …)``) is found with ``ast``. A code built at run time (an f-string) cannot be
read so; :data:`BUILT` names each such call's codes, and a new one fails the test until
it is named here and documented.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "vxtrain"
DOC = ROOT / "docs" / "validation.md"
CODE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+|[a-z]+")

#: Calls whose argument at this position is the diagnostic's code.
CODE_ARGUMENT = {"error": 0, "warning": 0, "_diag": 0, "_fatal": 0, "_note": 1, "SourceError": 1,
                 "source_folder_checked": 3, "BasePythonError": 0}
#: Codes made at run time, by the file that makes them: every value the f-string takes.
BUILT = {
    "experiment_rules.py": {"experiment-name", "experiment-run-name"},
    "study_rules.py": {"study-max-trials-missing", "study-parallel-trials-missing"},
    # f"schema-{kind}": the JSON Schema keywords schema.json uses that have no code of their own.
    "schema.py": {"schema-minimum", "schema-maximum", "schema-minlength", "schema-maxlength",
                  "schema-minitems", "schema-minproperties", "schema-pattern", "schema-uniqueitems"},
    # error(code if isinstance(code, str) else "check-failed", …): an exception's own code, else this.
    "bulk.py": {"check-failed"},
}


def _name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _logging(call: ast.Call) -> bool:
    """``LOGGER.warning("%s", line)``, ``self.session.log.warning(…)``: a logging call, not a diagnostic."""
    if not isinstance(call.func, ast.Attribute):
        return False
    value = call.func.value
    name = value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) else ""
    return name.lower().endswith(("logger", "log"))


def _code_calls() -> Iterator[tuple[Path, ast.Call, ast.expr]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "diagnostics.py":  # where error() and warning() are defined
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and (name := _name(node)) in CODE_ARGUMENT and not _logging(node):
                position = CODE_ARGUMENT[name]
                # error(code, message): a diagnostic has a message after its code (SourceError: before it)
                if len(node.args) > position and len(node.args) >= 2:
                    yield path, node, node.args[position]


def _literal_codes() -> dict[str, str]:
    found: dict[str, str] = {}
    for path, call, arg in _code_calls():
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            found.setdefault(arg.value, f"{path.relative_to(ROOT)}:{call.lineno}")
    return found


def _built_in() -> set[str]:
    """The files where a code is made at run time: not a literal, nor a code passed on by name
    (``error(code, …)``, ``error(exc.code, …)``: the literal is where the name was set)."""
    return {path.name for path, _, arg in _code_calls()
            if not isinstance(arg, (ast.Constant, ast.Name, ast.Attribute))}


def _documented() -> set[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Every code", 1)[1]
    return set(re.findall(r"`([a-z0-9-]+)`", section))


def test_the_scan_finds_codes_of_every_kind_of_call() -> None:
    found = _literal_codes()
    # one of each form: a rule's error, the loader's _fatal and _note, SourceError, source_folder_checked
    assert {"vpc-peering-unsupported", "too-many-nodes", "undefined-variable", "source-credentials",
            "build-source-missing", "gpudirect-nccl-env", "notify-url", "build-python-mismatch"} <= set(found)
    assert all(CODE.fullmatch(code) for code in found), [c for c in found if not CODE.fullmatch(c)]


def test_every_code_is_documented() -> None:
    documented = _documented()
    missing = {code: where for code, where in _literal_codes().items() if code not in documented}
    assert not missing, f"add these codes to docs/validation.md, 'Every code': {missing}"


def test_every_code_built_at_run_time_is_named_and_documented() -> None:
    assert _built_in() == set(BUILT), "a code made by an f-string: name its values in BUILT"
    missing = {code for codes in BUILT.values() for code in codes} - _documented()
    assert not missing, f"add these codes to docs/validation.md, 'Every code': {sorted(missing)}"


def test_every_documented_code_is_one_vxtrain_emits() -> None:
    emitted = set(_literal_codes()) | {code for codes in BUILT.values() for code in codes}
    section = DOC.read_text(encoding="utf-8").split("## Every code", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    named = {code for row in rows for code in re.findall(r"`([a-z0-9-]+)`", row.split("|")[1])}
    assert named - emitted == set(), "docs/validation.md names codes nothing emits"
