"""``--output github`` (workflow-command annotations) and ``--output markdown`` (the plan as
GitHub-flavoured tables) on validate and plan.

The annotations are read back the way GitHub's runner reads them (actions/runner,
src/Runner.Worker/ActionCommandManager.cs: ``ActionCommand.TryParse``, its unescaping of
data and properties), so a message with ``%``, a newline, ``:`` or ``,`` must survive.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.incli import run
from vxtrain.planning.cost import usd
from vxtrain.render import github

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "configs" / "examples"
RS = EXAMPLES / "reduction-server.yaml"

# The runner's unescaping, in its order (ActionCommand.cs: _escapeMappings / _escapePropertyMappings).
_UNESCAPE_DATA = (("%0D", "\r"), ("%0A", "\n"), ("%25", "%"))
_UNESCAPE_PROPERTY = (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%"))
_COMMAND = re.compile(r"^::(?P<name>\w+)(?: (?P<props>[^:]*))?::(?P<data>.*)$")


def _unescape(text: str, table: tuple[tuple[str, str], ...]) -> str:
    for escaped, plain in table:
        text = text.replace(escaped, plain)
    return text


def parse_command(line: str) -> dict[str, Any]:
    """One workflow command as GitHub's runner reads it: name, properties, message."""
    found = _COMMAND.match(line)
    assert found, f"not a workflow command: {line!r}"
    props = {}
    for pair in filter(None, (found.group("props") or "").split(",")):
        key, _, value = pair.partition("=")
        props[key] = _unescape(value, _UNESCAPE_PROPERTY)
    return {"name": found.group("name"), **props, "message": _unescape(found.group("data"), _UNESCAPE_DATA)}


def _annotations(out: str) -> list[dict[str, Any]]:
    return [parse_command(line) for line in out.splitlines()]


BAD = "display_name: x\nchief: {machine_type: n1-standrad-4, image: i, replicas: 2}\n"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout with specs in a sub-folder, GITHUB_WORKSPACE naming it, run from elsewhere."""
    ws = tmp_path / "checkout"
    (ws / "configs").mkdir(parents=True)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(ws))
    monkeypatch.chdir(tmp_path)
    return ws


def test_escaping_follows_githubs_workflow_command_rules() -> None:
    assert github.escape_data("50% done\r\nnext: a, b") == "50%25 done%0D%0Anext: a, b"
    assert github.escape_property("a%b\r\nc:d,e") == "a%25b%0D%0Ac%3Ad%2Ce"
    # %25 first on the way in, last on the way out: a literal "%0A" stays four characters.
    assert _unescape(github.escape_data("%0A"), _UNESCAPE_DATA) == "%0A"
    assert _unescape(github.escape_property("%3A,"), _UNESCAPE_PROPERTY) == "%3A,"


def test_validate_github_one_annotation_per_diagnostic_relative_to_the_workspace(
        workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = workspace / "configs" / "bad.yaml"
    spec.write_text(BAD)
    code, out, _ = run(capsys, "validate", str(spec), "--output", "github")
    assert code == 1
    code_json, doc, _ = run(capsys, "validate", str(spec), "--output", "json")
    diags = doc["files"][0]["diagnostics"]
    got = _annotations(out)
    assert len(got) == len(diags) == 2
    for annotation, d in zip(got, diags):
        assert annotation == {"name": d["severity"], "file": "configs/bad.yaml", "line": str(d["line"]),
                              "col": str(d["column"]), "title": d["code"],
                              "message": f"{d['message']} (at {d['path']})"}
    assert got[0]["title"] == "unknown-machine-type" and (got[0]["line"], got[0]["col"]) == ("2", "9")


def test_cwd_is_the_workspace_without_github_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bad.yaml").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    _, out, _ = run(capsys, "validate", "sub", "--output", "github")
    assert {a["file"] for a in _annotations(out)} == {"sub/bad.yaml"}


def test_values_that_need_escaping_survive_in_file_and_message(workspace: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A file name with ':' and ',' and a message quoting '%' and a line break round-trip
    through GitHub's parsing; without escaping, the ',' would end the file property."""
    spec = workspace / "configs" / "a,b:c.yaml"
    spec.write_text('display_name: x\nchief: {machine_type: "n1%0A-\\nstd", image: i}\n')
    code, out, _ = run(capsys, "validate", str(spec), "--output", "github")
    assert code == 1
    (line,) = out.splitlines()
    parsed = parse_command(line)
    assert parsed["file"] == "configs/a,b:c.yaml" and parsed["title"] == "machine-not-offered"
    assert parsed["message"].startswith('machine type "n1%0A-\nstd" is not one Vertex AI training offers')


def test_a_value_from_a_flag_has_no_file_and_says_where_it_came_from(
        workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = workspace / "configs" / "job.yaml"
    spec.write_text((EXAMPLES / "quickstart.yaml").read_text())
    code, out, _ = run(capsys, "validate", str(spec), "--region", "mars-1", "--output", "github")
    assert code == 1
    (annotation,) = _annotations(out)
    assert annotation["name"] == "error" and annotation["title"] == "unknown-region"
    assert "file" not in annotation and "line" not in annotation
    assert annotation["message"].startswith('--region: region "mars-1" is not a Vertex AI location')


def test_a_file_outside_the_workspace_is_named_in_the_message(workspace: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text(BAD)
    _, out, _ = run(capsys, "validate", str(outside), "--output", "github")
    first = _annotations(out)[0]
    assert "file" not in first and first["message"].startswith(f"{outside}:2:9: machine type")


def test_warnings_are_warning_annotations_and_a_valid_spec_prints_nothing(
        workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = workspace / "configs" / "job.yaml"
    spec.write_text("display_name: x\nchief: {machine_type: n1-standard-4, image: i}\n"
                    "evaluators: {replicas: 2, machine_type: n1-standard-4, image: i}\n")
    code, out, _ = run(capsys, "validate", str(spec), "--output", "github")
    assert code == 0 and {a["name"] for a in _annotations(out)} == {"warning"}
    good = workspace / "configs" / "good.yaml"
    good.write_text((EXAMPLES / "quickstart.yaml").read_text())
    assert run(capsys, "validate", str(good), "--output", "github")[:2] == (0, "")


def test_plan_github_gives_the_plan_s_diagnostics_as_annotations(workspace: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    spec = workspace / "configs" / "bad.yaml"
    spec.write_text(BAD)
    code, out, _ = run(capsys, "plan", str(spec), "--output", "github")
    assert code == 1
    assert [a["title"] for a in _annotations(out)] == ["unknown-machine-type", "chief-replicas"]


# --- Markdown -----------------------------------------------------------------------

def table_rows(markdown: str, header_start: str) -> list[list[str]]:
    """The rows of the GFM table whose header starts with ``header_start``, split on unescaped
    pipes and unescaped as GitHub shows them."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        rows.append([re.sub(r"\\(.)", r"\1", c.strip()) for c in cells])
    header, rule, *body = rows
    assert all(set(c) <= set("-:") for c in rule) and all(len(r) == len(header) for r in body), markdown
    return [header, *body]


def test_plan_markdown_has_pools_reduction_server_cost_and_quota(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, _ = run(capsys, "plan", str(RS), "--gradient-size", "1GB", "--output", "json")
    code_md, md, _ = run(capsys, "plan", str(RS), "--gradient-size", "1GB", "--output", "markdown")
    assert code == code_md == 0
    assert md.startswith("### vxtrain plan: bert-large-rs\n")
    pools = table_rows(md, "| pool | role | replicas | machine")
    assert pools[0] == ["pool", "role", "replicas", "machine", "accelerators", "GPU network", "Gbps/node",
                        "total Gbps", "confidence"]
    want = [[str(p["index"]), p["role"], str(p["replicas"]), p["machine_type"]] for p in doc["bandwidth"]["pools"]]
    assert [row[:4] for row in pools[1:]] == want
    assert pools[3][1] == "reduction_server" and pools[3][7] == "512"
    assert "Reduction Server: 16 × n1-highcpu-16 = 512 Gbps ≥ 500 Gbps training" in md
    cost = table_rows(md, "| pool | role | replicas | per node")
    assert [row[5] for row in cost[1:]] == [usd(p["per_hour"]) for p in doc["cost"]["pools"]]
    per_hour, most = usd(doc["cost"]["per_hour"]), usd(doc["cost"]["max_total"])
    assert f"**Job: {per_hour}/h; at most {most} up to 48 h timeout \\[unverified\\]**" in md
    quota = table_rows(md, "| counts | metric | needed")
    assert ["NVIDIA_TESLA_V100 GPUs", "custom_model_training_nvidia_v100_gpus", "40"] in quota


def test_plan_markdown_of_an_invalid_spec_is_its_diagnostics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    Path("bad.yaml").write_text(BAD)
    code, md, _ = run(capsys, "plan", "bad.yaml", "--output", "markdown")
    assert code == 1
    rows = table_rows(md, "| severity | where")
    assert rows[1][:3] == ["error", "bad.yaml:2:9", "unknown-machine-type"]
    assert md.rstrip().endswith("bad.yaml is not valid: no job to plan.")


def test_markdown_cells_keep_a_spec_s_pipes_and_markup_as_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A '|' in a value would split a row; '<', '*' and '`' would become HTML or emphasis."""
    monkeypatch.chdir(tmp_path)
    Path("odd.yaml").write_text('display_name: x\nchief: {machine_type: "n1|<b>*x*`", image: i}\n')
    _, md, _ = run(capsys, "validate", "odd.yaml", "--output", "markdown")
    rows = table_rows(md, "| severity | where")
    assert rows[1][3].startswith('machine type "n1|<b>*x*`" is not one')
    assert "<b>" not in md and "\\<b\\>" in md


def test_validate_markdown_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    Path("good.yaml").write_text((EXAMPLES / "quickstart.yaml").read_text())
    code, md, _ = run(capsys, "validate", ".", "--output", "markdown")
    assert code == 0 and md == "### vxtrain validate\n\n1 file checked: 1 valid, 0 invalid (0 errors, 0 warnings)\n"


def test_other_commands_keep_text_and_json_only(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "env", str(EXAMPLES / "quickstart.yaml"), "--replica", "workerpool0:0",
                       "--output", "github")
    assert code == 2 and "github" in err


def _modules_loaded(*argv: str) -> set[str]:
    code = ("import atexit, json, sys; atexit.register(lambda: print(json.dumps(sorted(sys.modules)), "
            "file=sys.stderr)); from vxtrain.cli import run; run()")
    res = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    return set(json.loads(res.stderr.strip().splitlines()[-1]))


@pytest.mark.slow
def test_the_renderings_load_only_when_asked_for() -> None:
    """Cold start: validate and plan (text or JSON) never import GitHub's renderings."""
    spec = str(EXAMPLES / "quickstart.yaml")
    for argv in (("validate", spec), ("plan", spec, "-o", "json")):
        assert "vxtrain.render.github" not in _modules_loaded(*argv), argv
    assert "vxtrain.render.github" in _modules_loaded("validate", spec, "-o", "github")
