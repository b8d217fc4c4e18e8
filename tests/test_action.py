"""The GitHub Action (action.yml at the repository's root), run as a runner runs a composite
action, since no runner runs here.

The harness reads action.yml and runs each step's ``run:`` script with ``bash --noprofile
--norc -eo pipefail`` (the runner's ``shell: bash``), after substituting the ``${{ … }}``
expressions it uses (``inputs.*`` with their defaults, ``github.action_path``,
``steps.ID.outputs.*``), with the step's ``env:``, in a workspace folder, and with the
runner's files: ``GITHUB_OUTPUT`` and ``GITHUB_STEP_SUMMARY`` (fresh per step, as the
runner makes them), ``GITHUB_PATH`` (its lines put first on PATH for the later steps),
``GITHUB_WORKSPACE``, ``GITHUB_ACTION_PATH`` and ``RUNNER_TEMP``. The ``uses:
actions/setup-python`` step is not run: this interpreter's venv stands in for the Python it
would set up. The install step runs for real once (slow: a fresh venv installed from a copy
of this tree with the lock); the other tests put this venv on PATH in its place, which is
what that step leaves behind (its ``GITHUB_PATH`` line).

``submit`` goes to an emulator on loopback (``--endpoint`` in the action's ``args``).
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.checkout import snapshot

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "configs" / "examples"
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
#: How a workflow names this action: the repository pyproject's Project-URLs name, at a tag.
USES = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"].removeprefix(
    "https://github.com/") + "@"
_EXPR = re.compile(r"\$\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}")
BAD = "display_name: x\nchief: {machine_type: n1-standrad-4, image: i, replicas: 2}\n"


@dataclass
class ActionRun:
    """What running the action left: its exit code, its output, its outputs and the summary."""

    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    steps: dict[str, dict[str, str]] = field(default_factory=dict)
    path: list[str] = field(default_factory=list)  # GITHUB_PATH's lines, in order


def parse_output_file(text: str) -> dict[str, str]:
    """A ``GITHUB_OUTPUT`` file: ``name=value`` lines and ``name<<DELIMITER`` blocks."""
    out: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block = []
            for body in lines:
                if body == delimiter:
                    break
                block.append(body)
            out[name] = "\n".join(block)
        elif line:
            name, _, value = line.partition("=")
            out[name] = value
    return out


def substitute(text: str, values: Mapping[str, str]) -> str:
    """``${{ NAME }}`` → its value; an expression the harness does not know fails the test."""
    def one(m: re.Match[str]) -> str:
        assert m.group(1) in values, f"action.yml uses ${{{{ {m.group(1)} }}}}: the harness gives no value"
        return values[m.group(1)]
    return _EXPR.sub(one, text)


def run_action(inputs: Mapping[str, str], workspace: Path, *, install: bool = False,
               action_path: Path = ROOT, timeout: float = 300) -> ActionRun:
    """Run action.yml's steps as the runner would, in ``workspace``; ``install``: run the install
    step for real (else this interpreter's venv is put on PATH, as that step would)."""
    runner = workspace.parent / f"runner-{workspace.name}"
    runner.mkdir(exist_ok=True)
    temp = runner / "temp"
    temp.mkdir(exist_ok=True)
    given = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    unknown = set(inputs) - set(given)
    assert not unknown, f"not inputs of the action: {unknown}"
    given.update(inputs)
    for name, spec in ACTION["inputs"].items():
        assert not spec.get("required") or given[name], f"input {name} is required"
    values = {f"inputs.{k}": v for k, v in given.items()} | {"github.action_path": str(action_path)}
    gh_path_file = runner / "path"
    gh_path_file.write_text("")
    summary = ""
    steps: dict[str, dict[str, str]] = {}
    result = ActionRun(0, "", "", {}, "")
    for number, step in enumerate(ACTION["runs"]["steps"]):
        if "uses" in step:
            assert step["uses"].startswith("actions/setup-python@"), step["uses"]
            continue  # this interpreter's venv stands in for the Python it sets up
        if step.get("id") == "install" and not install:
            with gh_path_file.open("a") as f:
                f.write(str(Path(sys.executable).parent) + "\n")  # what the step leaves on GITHUB_PATH
            continue
        assert step["shell"] == "bash", step
        script = runner / f"step{number}.sh"
        script.write_text(substitute(step["run"], values))
        output, step_summary = runner / f"output{number}", runner / f"summary{number}"
        output.write_text("")
        step_summary.write_text("")
        path_entries = [line for line in gh_path_file.read_text().splitlines() if line]
        env = {**os.environ, **{k: substitute(str(v), values) for k, v in (step.get("env") or {}).items()},
               "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(step_summary),
               "GITHUB_PATH": str(gh_path_file), "GITHUB_WORKSPACE": str(workspace),
               "GITHUB_ACTION_PATH": str(action_path), "RUNNER_TEMP": str(temp), "GITHUB_ACTIONS": "true",
               # The runner prepends each GITHUB_PATH line, so the last one added comes first.
               "PATH": os.pathsep.join([*reversed(path_entries), os.environ["PATH"]])}
        env.pop("PYTHONPATH", None)
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workspace,
                              env=env, capture_output=True, text=True, timeout=timeout)
        result.stdout += done.stdout
        result.stderr += done.stderr
        summary += step_summary.read_text()
        if step.get("id"):
            steps[step["id"]] = parse_output_file(output.read_text())
            values |= {f"steps.{step['id']}.outputs.{k}": v for k, v in steps[step["id"]].items()}
        if done.returncode != 0:  # a failed step fails the composite action; later steps do not run
            result.returncode = done.returncode
            break
    for name, spec in ACTION["outputs"].items():
        missing = {m.group(1): "" for m in _EXPR.finditer(spec["value"]) if m.group(1) not in values}
        result.outputs[name] = substitute(spec["value"], values | missing)  # an unset output is empty
    result.summary, result.steps = summary, steps
    result.path = [line for line in gh_path_file.read_text().splitlines() if line]
    return result


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The caller's checkout: configs/ with the examples, and nothing of the action."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    shutil.copytree(EXAMPLES, ws / "configs")
    return ws


@pytest.fixture(scope="module")
def emulator_address() -> Iterator[str]:
    from vxtrain.backends.emulator import start_emulator

    handle = start_emulator(simulate_seconds=0.2, out=io.StringIO())
    try:
        yield handle.address
    finally:
        handle.stop(grace=None)


def _annotations(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith(("::error", "::warning"))]


# --- the manifest -----------------------------------------------------------------------

def test_the_manifest_is_a_composite_action_with_the_contract_s_inputs_and_outputs() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) == {"command", "spec", "args", "python-version"}
    assert set(ACTION["outputs"]) == {"job", "state", "cost-usd"}
    assert all(out["value"].startswith("${{ steps.run.outputs.") for out in ACTION["outputs"].values())
    setup, install, run = ACTION["runs"]["steps"]
    assert setup["uses"].startswith("actions/setup-python@") and setup["with"] == {
        "python-version": "${{ inputs.python-version }}"}
    assert install["env"]["VXTRAIN_ACTION_PATH"] == "${{ github.action_path }}"
    assert '-c "$VXTRAIN_ACTION_PATH/requirements/lock.txt" "$VXTRAIN_ACTION_PATH"' in install["run"]
    assert run["id"] == "run"


def test_no_input_is_spliced_into_a_script() -> None:
    """Inputs reach the scripts through env: a spec named `$(curl …)` is a file name, not code."""
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step.get("name")


def test_plan_arguments_keeps_the_options_plan_shares_with_submit() -> None:
    from vxtrain.cli import plan_arguments

    argv = ["--var", "A=1", "--wait", "--set", "a.b=2", "--set=c=3", "-f", "o.yaml", "--idempotency-key", "k",
            "--project", "p", "--strict", "--max-hourly-cost", "5", "-o", "json", "--endpoint", "127.0.0.1:1"]
    assert plan_arguments("submit", argv) == ["--max-hourly-cost", "5.0", "--strict", "--overlay", "o.yaml",
                                              "--set", "a.b=2", "--set", "c=3", "--var", "A=1", "--project", "p"]
    assert plan_arguments("submit", ["--wait", "--no-logs"]) == []


# --- validate, plan, submit ---------------------------------------------------------------

@pytest.mark.slow
def test_validate_annotates_the_pull_request_and_writes_the_summary(workspace: Path) -> None:
    (workspace / "configs" / "bad.yaml").write_text(BAD)
    run = run_action({"command": "validate", "spec": "configs/bad.yaml configs/quickstart.yaml"}, workspace)
    assert run.returncode == 1, run.stderr
    assert _annotations(run.stdout) == [
        '::error file=configs/bad.yaml,line=2,col=9,title=unknown-machine-type::machine type "n1-standrad-4" '
        'does not exist; did you mean "n1-standard-4"? (at chief.machine_type)',
        "::error file=configs/bad.yaml,line=2,col=48,title=chief-replicas::the chief pool has 2 replicas: "
        "Vertex AI requires exactly 1 replica in workerPoolSpecs[0]; put the other replicas in 'workers' "
        "(pool 1) (at chief.replicas)"]
    assert run.summary.startswith("### vxtrain validate\n\n2 files checked: 1 valid, 1 invalid (2 errors")
    assert "| error | configs/bad.yaml:2:9 | unknown-machine-type |" in run.summary


@pytest.mark.slow
def test_validate_of_a_good_folder_passes_quietly(workspace: Path) -> None:
    run = run_action({"spec": "configs/quickstart.yaml", "args": "--strict"}, workspace)  # validate: the default
    assert run.returncode == 0, run.stdout + run.stderr
    assert _annotations(run.stdout) == [] and "1 file checked: 1 valid" in run.summary
    assert run.outputs == {"job": "", "state": "", "cost-usd": ""}


@pytest.mark.slow
def test_plan_writes_the_markdown_plan_and_the_cost_output(workspace: Path) -> None:
    args = "--var 'UNUSED=a b' --project my-project"
    run = run_action({"command": "plan", "spec": "configs/reduction-server.yaml", "args": args}, workspace)
    assert run.returncode == 0, run.stdout + run.stderr
    plan = json.loads(subprocess.run(
        [sys.executable, "-m", "vxtrain", "plan", "configs/reduction-server.yaml", "-o", "json"],
        cwd=workspace, capture_output=True, text=True, check=True).stdout)
    assert run.outputs["cost-usd"] == str(plan["cost"]["max_total"]) and float(run.outputs["cost-usd"]) > 1000
    assert run.summary.startswith("### vxtrain plan: bert-large-rs\n")
    assert "| 2 | reduction_server | 16 | n1-highcpu-16 |" in run.summary
    assert "#### Quota needed in us-central1" in run.summary
    assert "configs/reduction-server.yaml → CustomJob in project my-project" in run.summary


@pytest.mark.slow
def test_submit_to_the_emulator_sets_the_outputs_and_a_rerun_adopts(workspace: Path, emulator_address: str) -> None:
    args = (f"--endpoint {emulator_address} --project ci-project --region us-central1 --wait --no-logs "
            "--idempotency-key action-test-1 --var 'NOTE=two words'")
    inputs = {"command": "submit", "spec": "configs/quickstart.yaml", "args": args}
    run = run_action(inputs, workspace)
    assert run.returncode == 0, run.stdout + run.stderr
    view = json.loads(run.stdout[run.stdout.index("{"):])
    assert run.outputs["job"] == view["name"] and view["name"].startswith(
        "projects/ci-project/locations/us-central1/customJobs/")
    assert run.outputs["state"] == "JOB_STATE_SUCCEEDED"
    assert run.outputs["cost-usd"] == str(view["cost"]["estimated"])
    # The summary: the plan submit sent (plan ran with the options it shares), then the job.
    assert "### vxtrain plan: quickstart" in run.summary
    assert "CustomJob in project ci-project, region us-central1" in run.summary
    assert f"| [{view['name']}]({view['console_url']}) | JOB_STATE_SUCCEEDED |" in run.summary
    again = run_action(inputs, workspace)  # a re-run of the workflow: the same key, the same job
    assert again.returncode == 0 and again.outputs["job"] == view["name"], again.stderr


@pytest.mark.slow
def test_a_failed_submit_fails_the_step_and_says_why(workspace: Path, emulator_address: str) -> None:
    (workspace / "configs" / "bad.yaml").write_text(BAD)
    run = run_action({"command": "submit", "spec": "configs/bad.yaml",
                      "args": f"--endpoint {emulator_address} --wait"}, workspace)
    assert run.returncode == 1
    assert any("file=configs/bad.yaml,line=2,col=9" in a for a in _annotations(run.stdout))
    assert "**submit failed** (SpecError, exit 1)" in run.summary
    assert run.outputs == {"job": "", "state": "", "cost-usd": ""}


@pytest.mark.slow
def test_a_bad_command_or_unbalanced_quote_is_an_error_annotation(workspace: Path) -> None:
    bad = run_action({"command": "deploy", "spec": "configs/quickstart.yaml"}, workspace)
    assert bad.returncode == 2 and "::error title=vxtrain action::command must be validate" in bad.stdout
    quote = run_action({"spec": "configs/quickstart.yaml", "args": "--var 'A=1"}, workspace)
    assert quote.returncode == 2 and "::error title=vxtrain action::VXTRAIN_ARGS: No closing quotation" in quote.stdout


@pytest.mark.slow
def test_a_spec_named_like_shell_code_is_only_a_file_name(workspace: Path) -> None:
    marker = workspace / "pwned"
    run = run_action({"spec": f"'$(touch {marker})'"}, workspace)
    assert not marker.exists()
    assert run.returncode == 1 and "::error title=file-not-found::$(touch" in run.stdout


# --- the install step, for real -------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="the action's checkout is copied with git ls-files")
def test_the_install_step_installs_this_ref_with_the_lock(tmp_path: Path, workspace: Path) -> None:
    """The real install step: a fresh venv, vxtrain from the action's checkout (a copy of this
    tree), every dependency at the lock's version; then validate runs with it."""
    action = snapshot(tmp_path / "action")
    run = run_action({"spec": "configs/quickstart.yaml"}, workspace, install=True, action_path=action,
                     timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (venv_bin,) = run.path
    assert Path(venv_bin) == workspace.parent / "runner-workspace" / "temp" / "vxtrain-venv" / "bin"  # RUNNER_TEMP
    shown = subprocess.run([str(Path(venv_bin) / "python"), "-c",
                            "import vxtrain, importlib.metadata as m; print(vxtrain.__file__); "
                            "print(m.version('pyyaml'), m.version('typer'))"],
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout.split("\n")
    assert Path(shown[0]).is_relative_to(Path(venv_bin).parent), shown  # installed, not this tree
    locked = {name.lower(): version for name, version in (
        line.split("==") for line in (ROOT / "requirements" / "lock.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#"))}
    assert shown[1].split() == [locked["pyyaml"], locked["typer"]]
    assert "1 file checked: 1 valid" in run.summary


# --- the documented workflows -----------------------------------------------------------------

WORKFLOW = ROOT / "docs" / "ci" / "github-actions.yml"
SHA = "0123456789abcdef0123456789abcdef01234567"
#: Test values of the expressions docs/ci/github-actions.yml gives the action.
GH_VALUES = {"vars.GCP_PROJECT": "test-project", "vars.GCP_REGION": "us-central1", "github.sha": SHA}


def action_steps(workflow: Mapping[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """(job id, inputs) of each step that uses this action, its expressions substituted."""
    values = {**GH_VALUES, **{f"env.{k}": str(v) for k, v in (workflow.get("env") or {}).items()}}
    return [(job_id, {k: substitute(str(v), values) for k, v in step["with"].items()})
            for job_id, job in workflow["jobs"].items() for step in job["steps"]
            if step.get("uses", "").startswith(USES)]


@pytest.mark.slow
def test_the_ci_recipe_s_action_steps_run_against_the_emulator(tmp_path: Path, emulator_address: str) -> None:
    """docs/ci/github-actions.yml: the pull request's validate and the release's submit, as written
    (submit sent to the emulator), the submit's outputs set from its JSON."""
    ws = tmp_path / "ci"
    ws.mkdir()
    shutil.copytree(ROOT / "configs", ws / "configs")
    shutil.copytree(ROOT / "requirements", ws / "requirements")  # configs/vxtrain-image.yaml installs from it
    steps = action_steps(yaml.safe_load(WORKFLOW.read_text()))
    assert [(job, inputs["command"]) for job, inputs in steps] == [("check", "validate"), ("submit", "submit")]
    (_, validate), (_, submit) = steps
    checked = run_action(validate, ws)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert [a for a in _annotations(checked.stdout) if a.startswith("::error")] == []
    assert " 0 invalid (0 errors" in checked.summary
    submit["args"] += f" --endpoint {emulator_address}"
    sent = run_action(submit, ws)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert sent.outputs["state"] == "JOB_STATE_SUCCEEDED"
    assert sent.outputs["job"].startswith("projects/test-project/locations/us-central1/customJobs/")
    assert float(sent.outputs["cost-usd"]) >= 0 and "### vxtrain plan: bert-large-rs" in sent.summary


def _documented_steps(path: Path) -> list[dict[str, Any]]:
    """The steps of a Markdown page's ```yaml blocks that use this action."""
    from tests.test_readme import parse

    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if str(node.get("uses", "")).startswith(USES):
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for block in parse(path.read_text())[0]:
        if block.lang == "yaml":
            walk(yaml.safe_load(textwrap.dedent(block.text)))
    return found


class _Hook(BaseHTTPRequestHandler):
    """A webhook receiver on loopback: what --notify posts, kept."""

    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        _Hook.received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.slow
@pytest.mark.parametrize("page", ["README.md", "docs/ci.md"])
def test_the_documented_action_steps_run_against_the_emulator(page: str, tmp_path: Path, emulator_address: str) -> None:
    """Each step the README and docs/ci.md show with this action, as written: its expressions
    given test values (a secret webhook: a receiver on loopback), submit sent to the emulator."""
    from tests.test_readme import BLOCKS

    steps = _documented_steps(ROOT / page)
    assert steps, f"{page} shows the action"
    ws = tmp_path / "ws"
    shutil.copytree(ROOT / "configs", ws / "configs")
    shutil.copytree(ROOT / "requirements", ws / "requirements")
    for block in BLOCKS:  # the README's spec files (spot-job.yaml), as its examples write them
        if block.file:
            (ws / block.file).write_text(block.text)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    hook = f"http://127.0.0.1:{server.server_address[1]}/hook"
    values = {**GH_VALUES, "vars.BERT_RUN": "7", "secrets.SLACK_WEBHOOK": hook}
    try:
        for step in steps:
            inputs = {k: substitute(str(v), values) for k, v in step["with"].items()}
            spec = ws / inputs["spec"]
            if not spec.exists():  # a path of the reader's own (configs/job.yaml): a job that runs
                spec.parent.mkdir(parents=True, exist_ok=True)
                spec.write_text((EXAMPLES / "quickstart.yaml").read_text())
            else:  # no notify: hook of the example reaches out of this machine
                spec.write_text(re.sub(r"^notify: .*$", f"notify: [{hook}]", spec.read_text(), flags=re.M))
            if inputs["command"] == "submit":  # a project per page: each page's key names its own job
                project = "test-" + re.sub(r"[^a-z]+", "-", page.lower().removesuffix(".md"))
                inputs["args"] += f" --endpoint {emulator_address} --project {project} --region us-central1"
            run = run_action(inputs, ws)
            assert run.returncode == 0, run.stdout + run.stderr
            if inputs["command"] == "submit":
                assert run.outputs["state"] == "JOB_STATE_SUCCEEDED" and run.outputs["job"], run.outputs
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    if "--notify" in str([s["with"] for s in steps]):
        assert {"started", "succeeded"} <= {event["event"] for event in _Hook.received}
