"""The CLI Contract: commands, JSON shapes, exit codes, no tracebacks."""
from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import typer

from vxtrain import cli
from vxtrain.cli import main
from vxtrain.commands import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "configs" / "examples"
RS = EXAMPLES / "reduction-server.yaml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code, out, _ = run(capsys, *argv, "--output", "json")
    return code, json.loads(out)


def test_the_command_table_names_the_module_of_every_command() -> None:
    """Each module of the table registers exactly the commands the table gives it, with the
    table's help line (their one home), so the root's --help and completion, read from the
    table, list what running a command finds."""
    for module in dict.fromkeys(entry.module for entry in COMMANDS.values()):
        registered = typer.Typer()
        importlib.import_module(f"vxtrain.commands.{module}").register(registered)
        names = [info.name for info in registered.registered_commands]
        assert names == [name for name, entry in COMMANDS.items() if entry.module == module]
        assert [info.help for info in registered.registered_commands] == [COMMANDS[n].help for n in names]
    for name, entry in COMMANDS.items():
        assert cli.load_command(name).help == entry.help, name
    for contract in ("validate", "plan", "submit", "status", "wait", "cancel", "list", "env",
                     "local-run", "emulator", "schema", "convert"):
        assert contract in COMMANDS


def _modules_loaded(argv: list[str], env: dict[str, str] | None = None) -> list[str]:
    """The modules a fresh ``vxtrain ARGV`` process has imported when it ends."""
    code = ("import atexit, json, sys; atexit.register(lambda: print(json.dumps(sorted(sys.modules)), "
            "file=sys.stderr)); from vxtrain.cli import run; run()")
    res = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, **(env or {})})
    loaded: list[str] = json.loads(res.stderr.strip().splitlines()[-1])
    return loaded


def _command_modules_loaded(argv: list[str], env: dict[str, str] | None = None) -> list[str]:
    """The vxtrain.commands.* modules a fresh ``vxtrain ARGV`` process has imported."""
    return [m for m in _modules_loaded(argv, env) if m.startswith("vxtrain.commands.")]


@pytest.mark.slow
def test_root_help_and_completion_of_command_names_come_from_the_table() -> None:
    """``vxtrain --help``, ``vxtrain`` alone and completing a command's name import no
    command module (the error handler's helpers in _common only), nor the check pipeline."""
    complete = {"_VXTRAIN_COMPLETE": "complete_bash", "COMP_WORDS": "vxtrain ", "COMP_CWORD": "1"}
    for argv, env in ((["--help"], None), ([], None), ([], complete)):
        loaded = _modules_loaded(argv, env)
        assert [m for m in loaded if m.startswith("vxtrain.commands.")] == ["vxtrain.commands._common"], argv
        assert "vxtrain.api" not in loaded and "vxtrain.pipeline" not in loaded, argv


@pytest.mark.slow
def test_a_command_line_imports_the_module_of_its_command_alone() -> None:
    complete = {"_VXTRAIN_COMPLETE": "complete_bash", "COMP_WORDS": "vxtrain list --", "COMP_CWORD": "2"}
    assert _command_modules_loaded(["validate", "--help"]) == ["vxtrain.commands._common",
                                                                "vxtrain.commands.validate"]
    assert _command_modules_loaded([], complete) == ["vxtrain.commands._common", "vxtrain.commands.jobs"]


def test_the_emulator_s_help_does_not_load_the_emulator() -> None:
    """grpc and aiplatform's protos cost `vxtrain emulator --help` (and completing its options)
    over a second: the command imports the emulator when it runs."""
    from vxtrain.backends.emulator import DEFAULT_PORT
    from vxtrain.commands import emulator

    assert emulator.DEFAULT_PORT == DEFAULT_PORT  # the command's copy, kept to stay light
    loaded = _modules_loaded(["emulator", "--help"])
    assert not [m for m in loaded if m.startswith(("grpc", "google.cloud.aiplatform", "vxtrain.backends.emulator"))]


def test_validate_folder_json_shape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bad.yml").write_text("display_name: x\nchief: {machine_type: n1-standard-4, image: i, replicas: 2}\n")
    (tmp_path / "good.yaml").write_text(RS.read_text())
    (tmp_path / "notes.txt").write_text("not a spec")
    code, doc = run_json(capsys, "validate", str(tmp_path))
    assert code == 1
    files = {Path(f["path"]).name: f for f in doc["files"]}
    assert set(files) == {"bad.yml", "good.yaml"}
    assert files["good.yaml"]["valid"] is True
    bad = files["bad.yml"]
    assert bad["valid"] is False
    diag = next(d for d in bad["diagnostics"] if d["severity"] == "error")
    assert set(diag) >= {"severity", "code", "message", "path", "line", "column"}
    assert diag["path"] == "chief.replicas" and diag["line"] == 2


def test_validate_text_is_compiler_style(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text("display_name: x\nchief:\n  machine_type: n1-standrad-8\n  image: i\n")
    code, out, _ = run(capsys, "validate", str(spec))
    assert code == 1
    assert f"{spec}:3:3: error:" in out
    assert "n1-standard-8" in out


def test_warnings_fail_only_with_strict(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text("display_name: x\nchief: {machine_type: n1-standard-4, image: i}\n"
                    "evaluators: {replicas: 2, machine_type: n1-standard-4, image: i}\n")
    assert run(capsys, "validate", str(spec))[0] == 0
    assert run(capsys, "validate", str(spec), "--strict")[0] == 1


def test_plan_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, "plan", str(RS))
    assert code == 0
    assert set(doc) == {"custom_job", "bandwidth", "cost", "diagnostics"}
    pools = doc["custom_job"]["jobSpec"]["workerPoolSpecs"]
    assert [p["replicaCount"] for p in pools] == [1, 4, 16]
    bw = doc["bandwidth"]
    assert bw["training_gbps"] == 500
    rs = bw["reduction_server"]
    assert {k: rs[k] for k in ("machine_type", "replicas", "gbps_per_replica")} == {
        "machine_type": "n1-highcpu-16", "replicas": 16, "gbps_per_replica": 32}
    assert bw["server_gbps"] == 512


def test_plan_overrides(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, "plan", str(RS), "--set", "workers.replicas=9", "--var", "IMAGE_TAG=abc123",
                         "--display-name", "renamed")
    assert code == 0
    job = doc["custom_job"]
    assert job["displayName"] == "renamed"
    assert job["jobSpec"]["workerPoolSpecs"][1]["replicaCount"] == 9
    assert job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["imageUri"].endswith(":abc123")
    # 10 × 100 Gbps of training traffic → 32 Reduction Server nodes of 32 Gbps.
    assert doc["bandwidth"]["reduction_server"]["replicas"] == 32


def test_plan_of_invalid_spec(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text("display_name: x\nchief: {machine_type: n1-standard-4, image: i, replicas: 2}\n")
    code, doc = run_json(capsys, "plan", str(spec))
    assert code == 1
    assert doc["custom_job"] is None
    assert any(d["code"] == "chief-replicas" for d in doc["diagnostics"])


def test_plan_gradient_size(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, "plan", str(RS), "--gradient-size", "1.3GB")
    assert code == 0
    assert "allreduce" in doc["bandwidth"]
    assert run(capsys, "plan", str(RS), "--gradient-size", "lots")[0] == 2


def test_schema_command_prints_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "schema")
    assert code == 0
    assert json.loads(out)["title"].startswith("vxtrain")


def test_convert_to_gcloud_round_trips(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "convert", str(RS), "--to", "gcloud")
    assert code == 0
    cfg = tmp_path / "bert.yaml"
    cfg.write_text(out)
    code, doc = run_json(capsys, "plan", str(cfg), "--project", "p", "--region", "us-central1")
    assert code == 0, doc["diagnostics"]
    _, original = run_json(capsys, "plan", str(RS))
    assert doc["custom_job"]["jobSpec"]["workerPoolSpecs"] == original["custom_job"]["jobSpec"]["workerPoolSpecs"]


def test_convert_gcloud_command_is_shell_quoted(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "convert", str(RS), "--to", "gcloud-command")
    assert code == 0
    assert "gcloud ai custom-jobs create" in out
    assert "--config=reduction-server.gcloud.yaml" in out
    bash = subprocess.run(["bash", "-n"], input=out, text=True, capture_output=True)
    assert bash.returncode == 0, bash.stderr


@pytest.mark.slow
@pytest.mark.parametrize("junk", [
    b"", b"\x00\xff\xfe", b"- a\n- b\n", b"a: [", b"a: &x *x", b"{{{{", b"display_name: !!python/object:os.system x\n",
    b"a: 1\na: 2\n", b"\t- x", "display_name: \u2603\nchief: 7\n".encode(),
])
def test_no_traceback_for_junk(junk: bytes, tmp_path: Path) -> None:
    spec = tmp_path / "junk.yaml"
    spec.write_bytes(junk)
    for cmd in (["validate"], ["plan"], ["convert", "--to", "native"]):
        res = subprocess.run([sys.executable, "-m", "vxtrain", cmd[0], str(spec), *cmd[1:]],
                             capture_output=True, text=True, cwd=ROOT)
        assert res.returncode == 1, (cmd, res.stdout, res.stderr)
        assert "Traceback" not in res.stdout + res.stderr
        assert "junk.yaml" in res.stdout + res.stderr


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert run(capsys, "validate")[0] == 2
    assert run(capsys, "plan", str(RS), "--output", "xml")[0] == 2
    assert run(capsys, "plan", str(RS), "--var", "NOEQUALS")[0] == 2
    assert run(capsys, "validate", str(tmp_path))[0] == 2  # a folder without specs


def test_validate_and_plan_never_import_aiplatform_or_cloud_logging() -> None:
    code = ("import sys; from vxtrain.cli import main; "
            f"rc = main(['validate', {str(EXAMPLES)!r}]); main(['plan', {str(RS)!r}]); "
            f"main(['plan', {str(EXAMPLES / 'quickstart.yaml')!r}]); "
            "bad = [m for m in sys.modules if m.startswith(('google.cloud.aiplatform', 'google.cloud.logging'))]; "
            "print(bad); sys.exit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("vxtrain ")


def test_bad_replica_count_is_reported_once(capsys: pytest.CaptureFixture[str]) -> None:
    # The invalid count is the one problem; Reduction Server sizing must not blame the catalog.
    code, doc = run_json(capsys, "plan", str(RS), "--set", "workers.replicas=two")
    assert code == 1
    assert [d["code"] for d in doc["diagnostics"]] == ["wrong-type"]
    assert doc["diagnostics"][0]["path"] == "workers.replicas"


def test_a_bad_flag_value_is_located_at_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, "validate", str(RS), "--display-name", "x" * 200)
    assert code == 1
    (diag,) = doc["files"][0]["diagnostics"]
    assert diag["file"] == "--display-name" and diag["path"] == "display_name"
    assert "128" in diag["message"]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_prints_its_help(capsys: pytest.CaptureFixture[str], command: str) -> None:
    # help strings are rich markup: `gs://BUCKET[/PREFIX]` read as a closing tag crashed --help
    code, out, err = run(capsys, command, "--help")
    assert code == 0, err
    assert "Usage:" in out and "unexpected error" not in out + err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_usage_lines_name_arguments_as_click_does(capsys: pytest.CaptureFixture[str], command: str) -> None:
    """``Usage: vxtrain plan [OPTIONS] FILE``: a required argument bare, an optional one in
    brackets, never typer's ``{FILE}``; in --help and in a usage error alike."""
    code, out, err = run(capsys, command, "--help")
    (usage,) = [line.strip() for line in out.splitlines() if "Usage:" in line]
    assert usage.startswith(f"Usage: vxtrain {command} [OPTIONS]") and "{" not in usage, usage
    if command in ("plan", "diff", "validate"):
        code, out, err = run(capsys, command)
        assert code == 2 and {"plan": "Usage: vxtrain plan [OPTIONS] FILE\n",
                              "diff": "Usage: vxtrain diff [OPTIONS] BEFORE [AFTER]\n",
                              "validate": "Usage: vxtrain validate [OPTIONS] PATH...\n"}[command] in err


def test_vxtrain_imports_only_typer_s_public_modules() -> None:
    """No module imports a private part of typer (``typer._click``, the click it vendors):
    it changes between typer releases without notice, and held typer's version back."""
    private = []
    for path in sorted((ROOT / "vxtrain").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            private += [f"{path.relative_to(ROOT)}:{node.lineno}: {name}" for name in names
                        if name.split(".")[0] == "typer" and any(p.startswith("_") for p in name.split(".")[1:])]
    assert private == []


def _help_texts() -> list[tuple[str, str]]:
    root: Any = typer.main.get_command(cli.app)
    texts = [("vxtrain", root.help or "")]
    for name in COMMANDS:
        cmd = cli.load_command(name)
        texts.append((name, cmd.help or ""))
        texts += [(f"{name} {p.name}", getattr(p, "help", None) or "") for p in cmd.params]
    return texts


@pytest.mark.parametrize(("where", "text"), _help_texts())
def test_help_text_shows_its_brackets(where: str, text: str) -> None:
    # typer renders help as rich markup: an unescaped `[workerpoolK-I]` vanished from `logs --help`
    from rich.text import Text
    assert Text.from_markup(text).plain == text.replace("\\[", "["), where


def test_plan_text_prints_the_jobs_strings_as_written_not_as_markup(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text('display_name: "[/red] x"\nregion: us-central1\n'
                    'chief: {machine_type: n1-standard-4, image: x, args: ["--filter=[abc]", "--t=[bold]b", '
                    '"--tag=:smile:"]}\n')
    code, out, err = run(capsys, "plan", str(spec))
    assert code == 0, err
    assert "CustomJob [/red] x" in out
    assert '"--filter=[abc]"' in out and '"--t=[bold]b"' in out
    assert '"--tag=:smile:"' in out  # rich's emoji codes are not expanded either


def test_with_output_json_an_error_is_still_one_document_on_stdout(capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("display_name: x\nchief: {machine_type: n1-standrd-4, image: i}\n")
    code, doc = run_json(capsys, "submit", str(bad), "--target", "local")
    assert code == 1
    (d,) = doc["error"]["diagnostics"]
    assert doc["error"]["exit_code"] == 1 and d["code"] == "unknown-machine-type" and (d["line"], d["column"]) == (2, 9)
    code, doc = run_json(capsys, "env", str(EXAMPLES / "quickstart.yaml"), "--replica", "workerpool9:0")
    assert code == 1 and "no replica workerpool9:0" in doc["error"]["message"]


@pytest.mark.parametrize("argv", [["plan", "--bogus", "x.yaml"], ["plan"], ["submit", "x.yaml", "--target", "moon"]])
def test_with_output_json_a_usage_error_is_one_document_too(capsys: pytest.CaptureFixture[str],
                                                            argv: list[str]) -> None:
    code, out, err = run(capsys, *argv, "--output", "json")
    assert code == 2 and json.loads(out)["error"]["type"] == "UsageError"
    message = json.loads(out)["error"]["message"]
    assert message and message.split()[-1].strip("'.") in err  # the same reason as on stderr
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""


def test_without_output_json_an_error_leaves_stdout_empty(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("display_name: x\nchief: {machine_type: n1-standrd-4, image: i}\n")
    code, out, err = run(capsys, "submit", str(bad), "--target", "local")
    assert code == 1 and out == "" and "unknown-machine-type" in err


@pytest.mark.parametrize("size", ["nan", "inf", "1e400", "-1GB", "0"])
def test_gradient_size_is_a_positive_finite_size_or_a_usage_error(capsys: pytest.CaptureFixture[str],
                                                                   size: str) -> None:
    code, doc = run_json(capsys, "plan", str(RS), "--gradient-size", size)  # one JSON document, no bare NaN
    assert code == 2 and "positive, finite size" in doc["error"]["message"]


@pytest.mark.parametrize(("text", "words"), [("0", "positive duration"), ("5m30s", "one number, one unit"),
                                             ("99999999999d", "protobuf Duration")])
def test_max_pending_durations_read_one_way(capsys: pytest.CaptureFixture[str], text: str, words: str) -> None:
    code, doc = run_json(capsys, "submit", str(RS), "--wait", "--max-pending", text)
    assert code == 2 and words in doc["error"]["message"]


def test_a_spec_file_name_no_file_can_have_is_a_diagnostic(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    name = str(tmp_path / ("n" * 300 + ".yaml"))  # a part past 255 bytes: for root too
    for command in ("validate", "plan"):
        code, out, err = run(capsys, command, name)
        assert code == 1 and "cannot read" in out + err and "unexpected" not in out + err


def _strict_json(text: str) -> Any:
    """``text`` parsed as RFC 8259 JSON: a bare NaN or Infinity fails, as it does in jq."""
    def refuse(constant: str) -> Any:
        raise ValueError(f"not JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


COUNTED = "display_name: x\nchief: {machine_type: n1-standard-4, image: i}\n"


@pytest.mark.parametrize(("spec", "path", "bound"), [
    # WorkerPoolSpec.replica_count is an int64 in the installed aiplatform_v1 protos
    (COUNTED + "workers: {replicas: %s, machine_type: n1-standard-4, image: i}\n", "workers.replicas", 2**63 - 1),
    (COUNTED + "evaluators: {replicas: %s, machine_type: n1-standard-4, image: i}\n", "evaluators.replicas",
     2**63 - 1),
    # MachineSpec.accelerator_count is an int32
    ("display_name: x\nchief: {machine_type: a2-highgpu-1g, image: i, accelerator: {type: NVIDIA_TESLA_A100, "
     "count: %s}}\n", "chief.accelerator.count", 2**31 - 1),
    # HyperparameterTuningJob.max_trial_count is an int32
    (COUNTED + "study: {metric: {id: a, goal: maximize}, parameters: {x: {type: integer, min: 1, max: 9}}, "
     "max_trials: %s}\n", "study.max_trials", 2**31 - 1),
])
def test_a_count_past_what_its_api_field_holds_is_an_error_at_its_key(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, spec: str, path: str, bound: int) -> None:
    """`replicas: 9223372036854775808` validated and failed at submit; 1.0e+308 wrote Infinity."""
    for value in (str(bound + 1), "1.0e+308"):
        (tmp_path / "job.yaml").write_text(spec % value)
        code, out, _ = run(capsys, "plan", str(tmp_path / "job.yaml"), "--output", "json")
        doc = _strict_json(out)
        assert code == 1 and doc["custom_job"] is None
        [d] = [d for d in doc["diagnostics"] if d["path"] == path and d["code"] == "schema-maximum"]
        assert d["line"] == spec.count("\n", 0, spec.index("%s")) + 1
        assert f"give at most {bound}" in d["message"] and "is an int" in d["message"]


def test_counts_at_their_bounds_plan_to_finite_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The largest counts accepted make large totals, never a bare Infinity in `plan -o json`."""
    (tmp_path / "job.yaml").write_text(
        "display_name: x\nregion: us-central1\nchief: {machine_type: n1-standard-4, image: i}\n"
        f"workers: {{replicas: {2**63 - 1}, machine_type: a2-highgpu-8g, image: i,"
        " accelerator: {type: NVIDIA_TESLA_A100, count: 8}}\n"
        "study: {metric: {id: a, goal: maximize}, parameters: {x: {type: double, min: -1.0e+308, max: 1.0e+308}},"
        f" max_trials: {2**31 - 1}, parallel_trials: {2**31 - 1}}}\n")
    code, out, _ = run(capsys, "plan", str(tmp_path / "job.yaml"), "--output", "json")
    doc = _strict_json(out)
    assert code == 0, doc["diagnostics"]
    assert doc["custom_job"]["jobSpec"]["workerPoolSpecs"][1]["replicaCount"] == 2**63 - 1


def test_json_output_is_json_a_strict_parser_reads(capsys: pytest.CaptureFixture[str]) -> None:
    """A figure that is not finite is written null: a bare NaN or Infinity is not JSON."""
    from vxtrain.commands import _common

    _common.emit_json({"x": float("inf"), "y": [float("nan"), 1.5, (-float("inf"),)], "z": "inf"})
    assert _strict_json(capsys.readouterr().out) == {"x": None, "y": [None, 1.5, [None]], "z": "inf"}


NOBODY = 65534


def _as_another_user(folder: Path) -> list[str]:
    """The command prefix that runs as another user (nobody, through setpriv) when this is
    root, who lists mode-000 folders all the same; empty for any other user. Skips, saying
    why, where no other user can run this interpreter."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []
    prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    try:
        probe = subprocess.run([*prefix, sys.executable, "-c", "import vxtrain"], capture_output=True,
                               timeout=60, cwd=folder)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot run as another user: {exc}")
    if probe.returncode != 0:
        pytest.skip(f"user {NOBODY} cannot run {sys.executable}: {probe.stderr.decode()[-200:]}")
    return prefix


@pytest.fixture
def shared_tree() -> Any:
    """A folder every user can read (pytest's tmp_path is root's alone), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="vxtrain-walk-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in folder.rglob("*"):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(folder)


@pytest.mark.slow
def test_a_folder_that_cannot_be_listed_is_an_error_and_the_rest_is_checked(shared_tree: Path) -> None:
    """10 specs and one mode-000 folder gave "3 files checked" and exit 0: the walk gave up
    on the rest of a folder after an entry it could not look into."""
    good = (RS.read_text())
    for name in [f"s{i}.yaml" for i in range(8)] + ["sub/t.yaml", "sub/zz/u.yaml"]:
        (shared_tree / name).parent.mkdir(parents=True, exist_ok=True)
        (shared_tree / name).write_text(good)
    for locked in (shared_tree / "d5", shared_tree / "sub" / "a-locked"):
        locked.mkdir()
        (locked / "hidden.yaml").write_text(good)
    cache = shared_tree / "cache"  # the other user's own cache folder
    cache.mkdir()
    os.chown(cache, NOBODY, NOBODY) if os.geteuid() == 0 else None
    prefix = _as_another_user(shared_tree)
    for locked in (shared_tree / "d5", shared_tree / "sub" / "a-locked"):
        locked.chmod(0)
    env = {**os.environ, "HOME": str(cache), "XDG_CACHE_HOME": str(cache), "NO_COLOR": "1"}
    command = [*prefix, sys.executable, "-m", "vxtrain", "validate", str(shared_tree)]
    done = subprocess.run([*command, "-o", "json"], capture_output=True, text=True, env=env, timeout=120,
                          cwd=shared_tree)
    assert done.returncode == 1, done.stderr
    files = {f["path"]: f for f in json.loads(done.stdout)["files"]}
    specs = sorted(p for p in files if p.endswith(".yaml"))
    assert len(specs) == 10 and all(files[p]["valid"] for p in specs)
    for locked in (shared_tree / "d5", shared_tree / "sub" / "a-locked"):
        [d] = files[str(locked)]["diagnostics"]
        assert (d["code"], d["severity"]) == ("folder-unreadable", "error")
        assert "Permission denied" in d["message"] and "not checked" in d["message"]
    text = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, cwd=shared_tree)
    assert text.returncode == 1
    assert f"{shared_tree / 'd5'}: error: cannot list the folder" in text.stdout
    assert "(1 error" not in text.stdout and "2 invalid (2 errors" in text.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_spec_in_a_folder_that_is_not_a_regular_file_is_refused(capsys: pytest.CaptureFixture[str],
                                                                  tmp_path: Path) -> None:
    """Found in a folder as named on the command line: refused at once, with why (it was left out in silence)."""
    (tmp_path / "good.yaml").write_text(RS.read_text())
    os.mkfifo(tmp_path / "pipe.yaml")
    (tmp_path / "gone.yaml").symlink_to(tmp_path / "deleted.yaml")
    code, doc = run_json(capsys, "validate", str(tmp_path))
    assert code == 1
    codes = {Path(f["path"]).name: [d["code"] for d in f["diagnostics"]] for f in doc["files"]}
    assert codes == {"good.yaml": [], "pipe.yaml": ["file-unreadable"], "gone.yaml": ["file-not-found"]}


# --- what validate warns, submit says (issue 34, item 3) ------------------------------------

def _warned_spec(tmp_path: Path) -> Path:
    """A valid spec with one warning (secret-env, at line 5) whose chief exits at once."""
    spec = tmp_path / "warned.yaml"
    spec.write_text("display_name: warned\nchief:\n  machine_type: n1-standard-4\n"
                    "  image: us-docker.pkg.dev/p/r/train:1\n  env: {API_TOKEN: x}\n"
                    f"  command: [{json.dumps(sys.executable)}, -c, 'pass']\n")
    return spec


def test_submit_prints_the_specs_warnings_as_validate_does_and_puts_them_in_its_json(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, emulator: Any) -> None:
    spec = _warned_spec(tmp_path)
    code, out, err = run(capsys, "validate", str(spec))
    said = [line for line in out.splitlines() if ": warning: " in line]  # validate's report: on stdout
    assert code == 0 and len(said) == 1 and said[0].startswith(f"{spec}:5:9: warning: ") and "[secret-env]" in said[0]
    code, out, err = run(capsys, "submit", str(spec), "--endpoint", emulator.address, "--output", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert [line for line in err.splitlines() if ": warning: " in line] == said
    assert [(d["code"], d["severity"], d["line"], d["column"], d["file"]) for d in doc["diagnostics"]] == [
        ("secret-env", "warning", 5, 9, str(spec))]
    code, out, err = run(capsys, "submit", str(spec), "--endpoint", emulator.address)  # text: the same line
    assert code == 0 and [line for line in err.splitlines() if ": warning: " in line] == said


def test_submit_gives_the_warnings_before_anything_is_created(tmp_path: Path, emulator: Any) -> None:
    from tests.submission.helpers import heard
    from vxtrain import api

    jobs_when_warned: list[int] = []
    seen: list[str] = []
    view = api.submit(_warned_spec(tmp_path), endpoint=emulator.address,
                      warnings=lambda ds: (jobs_when_warned.append(len(emulator.jobs())),
                                           seen.extend(d.code for d in ds)))
    assert seen == ["secret-env"] and jobs_when_warned == [0] and len(emulator.jobs()) == 1
    assert [d["code"] for d in view["diagnostics"]] == ["secret-env"]
    lines: list[str] = []
    with heard(lines.append):  # no callback: said on the vxtrain.submission logger
        api.submit(_warned_spec(tmp_path), endpoint=emulator.address)
    assert any(line.endswith("(at chief.env.API_TOKEN)") and ": warning: " in line for line in lines), lines
