"""vxtrain in other people's tools: pre-commit, editors (the printed schema),
CI recipes (docs/ci/), readable output (NO_COLOR, --version) and generated docs."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from tests.checkout import snapshot
from vxtrain import catalog
from vxtrain.cli import main
from vxtrain.commands.schema import enriched_schema

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"
CI = ROOT / "docs" / "ci"
SHA = "0123456789abcdef0123456789abcdef01234567"
BAD_SPEC = "display_name: x\nchief: {machine_type: n1-standrad-4, image: i, replicas: 2}\n"


def _native_examples() -> list[Path]:
    """configs/ files in the native format (gcloud and legacy configs have their own shapes)."""
    out = []
    for path in sorted(CONFIGS.rglob("*.y*ml")):
        data = yaml.safe_load(path.read_text())
        if isinstance(data, dict) and "display_name" in data:
            out.append(path)
    return out


# --- editors: the printed schema ----------------------------------------------------

@pytest.fixture(scope="module")
def printed_schema() -> dict[str, Any]:
    """What `vxtrain schema` prints, parsed."""
    out = subprocess.run([sys.executable, "-m", "vxtrain", "schema"], cwd=ROOT, capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout)  # type: ignore[no-any-return]


@pytest.mark.slow
def test_printed_schema_is_draft_2020_12_and_enriched(printed_schema: dict[str, Any]) -> None:
    Draft202012Validator.check_schema(printed_schema)
    assert printed_schema == enriched_schema()
    machine = printed_schema["properties"]["workers"]["properties"]["machine_type"]
    assert machine["anyOf"][0]["enum"] == catalog.training_machine_types()
    assert "n1-highcpu-16" in machine["anyOf"][0]["enum"]
    rs_machine = printed_schema["properties"]["reduction_server"]["properties"]["machine_type"]
    assert rs_machine["default"] == "n1-highcpu-16" and "anyOf" in rs_machine
    accel = printed_schema["$defs"]["accelerator"]["properties"]["type"]
    assert accel["enum"] == catalog.accelerator_types() and "NVIDIA_TESLA_V100" in accel["enum"]
    strategy = printed_schema["properties"]["scheduling"]["properties"]["strategy"]
    assert strategy["enum"] == ["STANDARD", "SPOT", "FLEX_START"] and strategy["default"] == "STANDARD"


def _leaf_properties(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        for key, sub in (node.get("properties") or {}).items():
            yield f"{path}.{key}", sub
            yield from _leaf_properties(sub, f"{path}.{key}")
        for key in ("additionalProperties", "items"):
            yield from _leaf_properties(node.get(key), f"{path}.{key}")
        for key, sub in (node.get("$defs") or {}).items():
            yield from _leaf_properties(sub, f"$defs.{key}")


def test_every_key_has_a_description_for_hover(printed_schema: dict[str, Any]) -> None:
    missing = [p for p, sub in _leaf_properties(printed_schema)
               if "description" not in sub and "$ref" not in sub]
    assert missing == []


@pytest.mark.parametrize("path", _native_examples(), ids=lambda p: p.name)
def test_native_examples_are_valid_against_the_printed_schema(printed_schema: dict[str, Any],
                                                             path: Path) -> None:
    errors = list(Draft202012Validator(printed_schema).iter_errors(yaml.safe_load(path.read_text())))
    assert errors == []


def test_unknown_machine_is_not_a_schema_error_but_unknown_accelerator_is(
        printed_schema: dict[str, Any]) -> None:
    """The rules only warn about a machine the catalog lacks; the accelerator enum is the API's."""
    validator = Draft202012Validator(printed_schema)
    spec = {"display_name": "x", "chief": {"machine_type": "z9-future-64", "image": "i"}}
    assert validator.is_valid(spec)
    spec["chief"]["accelerator"] = {"type": "NVIDIA_TESLA_V1000", "count": 1}
    assert not validator.is_valid(spec)


# --- pre-commit ------------------------------------------------------------------------

def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=vxtrain-test", "-c", "user.email=test@example.invalid",
                    "-c", "init.defaultBranch=main", *args], cwd=cwd, check=True, capture_output=True)


def _snapshot(dest: Path) -> None:
    """The working tree (tracked and untracked, not ignored) committed in a fresh repo:
    try-repo uses a commit, and this tests uncommitted changes too."""
    snapshot(dest)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-qm", "snapshot")


def _dependencies_dir(tmp_path: Path) -> Path:
    """This interpreter's installed packages, minus any installed vxtrain (links)."""
    out = tmp_path / "deps"
    out.mkdir()
    for site in dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]):
        for entry in Path(site).iterdir():
            if not entry.name.startswith(("vxtrain", "__editable__")) and not (out / entry.name).exists():
                (out / entry.name).symlink_to(entry)
    return out


def _offline_pip_env(tmp_path: Path) -> dict[str, str]:
    """pre-commit installs the hook repo with `pip install .` into a new venv. Offline:
    PIP_NO_INDEX; PIP_NO_DEPS installs vxtrain alone, and PYTHONPATH lends it this
    interpreter's dependencies (without vxtrain, so the hook runs the snapshot's);
    PIP_NO_BUILD_ISOLATION=0 (pip's inverted spelling of --no-build-isolation)
    builds with the setuptools found there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PRE_COMMIT"))}
    return {**env, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PIP_NO_INDEX": "1",
            "PIP_NO_DEPS": "1", "PIP_NO_BUILD_ISOLATION": "0",
            "PYTHONPATH": str(_dependencies_dir(tmp_path)), "NO_COLOR": "1", "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.mark.slow
def test_pre_commit_try_repo_rejects_a_bad_spec_and_passes_a_good_one(tmp_path: Path) -> None:
    """The real pre-commit, the real hook manifest (language: python, entry `vxtrain
    validate`): try-repo builds the hook's venv from a snapshot of this tree.

    Why not a `repo: local` mirror: the hook manifest itself (entry, files regex,
    pass_filenames, the console script from pyproject) is what users get, so it is
    what runs. The install is kept offline with pip's environment variables (see
    _offline_pip_env) instead of fetching the dependencies from PyPI; about 10 s.
    """
    pytest.importorskip("pre_commit", reason="pip install pre-commit (the test extra)")
    hook_repo, project = tmp_path / "hook", tmp_path / "project"
    hook_repo.mkdir()
    project.mkdir()
    _snapshot(hook_repo)
    (project / "bad.yaml").write_text(BAD_SPEC)
    shutil.copy(CONFIGS / "examples" / "quickstart.yaml", project / "good.yaml")
    (project / "notes.txt").write_text("not a spec: the files regex skips it")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    env = _offline_pip_env(tmp_path)

    def try_repo(*files: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "vxtrain-validate",
                "--files", *files]
        return subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=240)

    bad = try_repo("bad.yaml", "good.yaml", "notes.txt")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "vxtrain validate" in bad.stdout and "Failed" in bad.stdout
    assert "bad.yaml:2:9: error:" in bad.stdout and 'did you mean "n1-standard-4"' in bad.stdout
    assert "bad.yaml:2:48: error:" in bad.stdout and "[chief-replicas]" in bad.stdout
    assert "2 files checked" in bad.stdout  # notes.txt was not passed
    good = try_repo("good.yaml", "notes.txt")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout


def test_hook_manifest() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "vxtrain-validate")
    assert hook["entry"] == "vxtrain validate" and hook["language"] == "python"
    assert hook["pass_filenames"] is True
    files = re.compile(hook["files"])
    assert files.search("configs/job.yaml") and files.search("a/b.yml") and not files.search("x.json")
    assert not files.search("x.yaml.bak")


# --- CI recipes ---------------------------------------------------------------------------

_CONTROL = {"&&", "||", ";", "|", "&"}
_KEYWORDS = {"then", "else", "do", "!", "{", "}"}


def shell_commands(script: str) -> list[list[str]]:
    """Simple commands of a shell script, as shell words (quotes removed, variables not expanded)."""
    out: list[list[str]] = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words: list[str] = []
        for token in [*lexer, ";"]:
            if token in _CONTROL:
                if words:
                    out.append(words)
                words = []
            elif token not in _KEYWORDS or words:
                words.append(token)
    return out


def vxtrain_commands(script: str) -> list[list[str]]:
    """The ``vxtrain ...`` commands of a script (any path to the executable)."""
    return [words for words in shell_commands(script) if Path(words[0]).name == "vxtrain"]


_SHELL_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def expand(word: str, variables: Mapping[str, str]) -> str:
    """``$NAME`` / ``${NAME}`` from ``variables``; an unknown name fails the test."""
    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        assert name in variables, f"the recipe uses ${name}: give it a test value"
        return variables[name]

    return _SHELL_VAR.sub(one, word)


@pytest.fixture(scope="module")
def emulator() -> Iterator[str]:
    from vxtrain.backends.emulator import start_emulator

    with start_emulator(simulate_seconds=0.2) as handle:
        yield handle.address


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout of the repo's configs, as the CI runner has it (with requirements/, which
    configs/vxtrain-image.yaml installs from)."""
    shutil.copytree(CONFIGS, tmp_path / "configs")
    shutil.copytree(ROOT / "requirements", tmp_path / "requirements")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_step(argv: list[str], capsys: pytest.CaptureFixture[str], endpoint: str) -> tuple[int, str]:
    """Run one recipe command with the CLI, in process; ``> FILE`` writes stdout there.
    ``submit`` goes to the emulator instead of Vertex AI."""
    args, target = argv[1:], None
    if ">" in args:
        at = args.index(">")
        args, target = args[:at], args[at + 1]
    if args[0] == "submit":
        args += ["--endpoint", endpoint]
    capsys.readouterr()
    code = main(args)
    out, err = capsys.readouterr()
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        Path(target).write_text(out)
    assert code == 0, f"{shlex.join(argv)} exited {code}:\n{out}\n{err}"
    return code, out


_GH_EXPR = re.compile(r"\$\{\{\s*([\w.]+)\s*\}\}")
GH_VALUES = {"vars.GCP_PROJECT": "test-project", "vars.GCP_REGION": "us-central1", "github.sha": SHA,
             "vars.GCP_WORKLOAD_IDENTITY_PROVIDER": "projects/1/locations/global/workloadIdentityPools/p/providers/gh",
             "vars.GCP_SERVICE_ACCOUNT": "ci@test-project.iam.gserviceaccount.com"}


def _github_runs() -> dict[str, list[list[str]]]:
    """job id → vxtrain commands of its `run:` steps (GitHub expressions substituted)."""
    workflow = yaml.safe_load((CI / "github-actions.yml").read_text())
    out: dict[str, list[list[str]]] = {}
    for job_id, job in workflow["jobs"].items():
        for step in job["steps"]:
            script = _GH_EXPR.sub(lambda m: GH_VALUES[m.group(1)], step.get("run", ""))
            out.setdefault(job_id, []).extend(vxtrain_commands(script))
    return out


def test_github_workflow_triggers_and_commands() -> None:
    workflow = yaml.safe_load((CI / "github-actions.yml").read_text())
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert set(triggers) == {"pull_request", "release"}
    runs = _github_runs()
    check = [" ".join(c[:2]) for c in runs["check"]]
    assert check == ["vxtrain plan", "vxtrain plan", "vxtrain diff", "vxtrain diff"]
    assert runs["submit"] == []  # the action validates and submits (tests/test_action.py runs those steps)
    from tests.test_action import USES

    uses = {job_id: [s["with"]["command"] for s in job["steps"] if s.get("uses", "").startswith(USES)]
            for job_id, job in workflow["jobs"].items()}
    assert uses == {"check": ["validate"], "submit": ["submit"]}
    auth = [s for s in workflow["jobs"]["submit"]["steps"] if "auth@" in s.get("uses", "")]
    assert [s["uses"] for s in auth] == ["google-github-actions/auth@v3"]
    assert set(auth[0]["with"]) == {"workload_identity_provider", "service_account"}


@pytest.mark.slow
def test_github_workflow_runs_against_the_emulator(workspace: Path, emulator: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    workflow = yaml.safe_load((CI / "github-actions.yml").read_text())
    variables = {**workflow["env"], "GITHUB_SHA": SHA, "GITHUB_BASE_REF": "main"}
    spec = workflow["env"]["SPEC"]
    # The step's non-vxtrain lines (git show of the base branch's spec), done here:
    base = yaml.safe_load((ROOT / spec).read_text())
    base["workers"]["replicas"] = 2
    (workspace / "plan").mkdir()
    (workspace / "plan" / "base.yaml").write_text(yaml.safe_dump(base))
    runs = _github_runs()
    for argv in runs["check"]:
        run_step([expand(w, variables) for w in argv], capsys, emulator)
    assert json.loads((workspace / "plan" / "plan.json").read_text())["custom_job"]["jobSpec"]
    assert "Bandwidth plan" in (workspace / "plan" / "plan.txt").read_text()
    diff = json.loads((workspace / "plan" / "diff.json").read_text())
    assert {"path": "jobSpec.workerPoolSpecs[1].replicaCount", "op": "changed", "before": 2,
            "after": 4} in diff["custom_job"]
    assert "+ jobSpec.workerPoolSpecs[1].replicaCount: 4" in (workspace / "plan" / "diff.txt").read_text()


def _cloudbuild() -> dict[str, Any]:
    return yaml.safe_load((CI / "cloudbuild.yaml").read_text())  # type: ignore[no-any-return]


CB_BUILTINS = {"PROJECT_ID": "test-project", "COMMIT_SHA": SHA, "TAG_NAME": "v1.0.0", "BUILD_ID": "b-1"}


def _cloudbuild_commands() -> dict[str, list[list[str]]]:
    """step id → its vxtrain commands, after Cloud Build's substitutions."""
    config = _cloudbuild()
    values = {**CB_BUILTINS, **config["substitutions"]}
    out: dict[str, list[list[str]]] = {}
    for step in config["steps"]:
        args = [expand(a, values) for a in step.get("args", [])]
        entry = step.get("entrypoint", "")
        if Path(entry).name == "vxtrain":
            out[step["id"]] = [[entry, *args]]
        elif entry == "bash" and args[:1] == ["-c"]:
            out[step["id"]] = vxtrain_commands(args[1])
    return out


def test_cloudbuild_config_steps() -> None:
    commands = _cloudbuild_commands()
    assert commands["install"] == []
    assert commands["validate"] == [["/workspace/.venv/bin/vxtrain", "validate", "configs/", "--output", "json"]]
    assert [c[1] for c in commands["plan"]] == ["plan", "plan"]
    (submit,) = commands["submit"]
    assert submit[submit.index("--idempotency-key") + 1] == SHA and "--wait" in submit
    assert set(_cloudbuild()["artifacts"]["objects"]["paths"]) == {"plan.json", "plan.txt"}


def test_cloudbuild_config_runs_against_the_emulator(workspace: Path, emulator: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    outputs = []
    for step_commands in _cloudbuild_commands().values():
        for argv in step_commands:
            outputs.append(run_step(argv, capsys, emulator)[1])
    for artifact in _cloudbuild()["artifacts"]["objects"]["paths"]:
        assert (workspace / artifact).read_text().strip()
    job = json.loads(outputs[-1])
    assert job["state"] == "JOB_STATE_SUCCEEDED" and job["idempotency_key"] == SHA
    # A retried build (same commit) returns the job that commit created.
    again = json.loads(run_step(_cloudbuild_commands()["submit"][0], capsys, emulator)[1])
    assert again["name"] == job["name"] and again["adopted"] is True


def test_shell_commands_reader() -> None:
    script = ('x=1; vxtrain a "b c" > out.json || status=$?\n'
              "if true; then /v/bin/vxtrain plan \\\n  f.yaml; fi\njq -r '.a | .b' f  # vxtrain no\n")
    assert vxtrain_commands(script) == [["vxtrain", "a", "b c", ">", "out.json"],
                                        ["/v/bin/vxtrain", "plan", "f.yaml"]]


# --- readable output ------------------------------------------------------------------------

_COLOUR = re.compile(r"\x1b\[[0-9;]*(?:3[0-9]|9[0-7]|38;)[0-9;]*m")


def _cli(tmp_path: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    return subprocess.run([sys.executable, "-m", "vxtrain", *argv], cwd=tmp_path, capture_output=True,
                          text=True, env={**base, "PYTHONPATH": str(ROOT), **env}, timeout=60)


@pytest.mark.slow
def test_colour_on_a_terminal_and_none_with_no_color(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(BAD_SPEC)
    forced = _cli(tmp_path, "validate", "bad.yaml", FORCE_COLOR="1", TERM="xterm-256color")
    assert forced.returncode == 1 and _COLOUR.search(forced.stdout)
    plain = _cli(tmp_path, "validate", "bad.yaml", FORCE_COLOR="1", NO_COLOR="1", TERM="xterm-256color")
    assert plain.returncode == 1 and not _COLOUR.search(plain.stdout + plain.stderr)
    # NO_COLOR (no-color.org) is about colour: bold may stay on a terminal.
    assert "bad.yaml:2:9: error:" in re.sub(r"\x1b\[[0-9;]*m", "", plain.stdout)
    piped = _cli(tmp_path, "validate", "bad.yaml")
    assert "\x1b[" not in piped.stdout + piped.stderr


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from vxtrain import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"vxtrain {__version__}"


def test_shell_completion_is_offered(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--install-completion" in out and "--show-completion" in out


# --- docs ------------------------------------------------------------------------------------

def _gen_docs() -> Any:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_spec_reference_is_generated_from_the_schema() -> None:
    from vxtrain.validation.schema import schema

    text = _gen_docs().render(schema())
    assert (ROOT / "docs" / "spec-reference.md").read_text() == text, "run: python scripts/gen_docs.py"
    for key in schema()["properties"]:
        assert f"| `{key}`" in text


def test_reduction_server_page_matches_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    page = (ROOT / "docs" / "reduction-server.md").read_text()
    assert "16 × n1-highcpu-16" in page and "512 Gbps" in page and "500 Gbps" in page
    main(["plan", str(CONFIGS / "examples" / "reduction-server.yaml"), "--output", "json"])
    rs = json.loads(capsys.readouterr().out)["bandwidth"]["reduction_server"]
    assert (rs["replicas"], rs["machine_type"], rs["gbps_per_replica"]) == (16, "n1-highcpu-16", 32)


def test_migration_page_example_compiles_like_its_gcloud_flags(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    page = (ROOT / "docs" / "migration.md").read_text()
    (spec,) = [b for b in re.findall(r"```yaml\n(.*?)```", page, re.S) if "chief:" in b]
    (tmp_path / "bert.yaml").write_text(spec)
    assert main(["plan", str(tmp_path / "bert.yaml"), "--output", "json"]) == 0
    pools = json.loads(capsys.readouterr().out)["custom_job"]["jobSpec"]["workerPoolSpecs"]
    flags = re.findall(r"--worker-pool-spec=(\S+)", page)
    assert len(flags) == len(pools) == 3
    for flag, pool in zip(flags, pools):
        fields = dict(kv.split("=", 1) for kv in flag.split(","))
        assert pool["machineSpec"]["machineType"] == fields["machine-type"]
        assert pool["replicaCount"] == int(fields["replica-count"])
        assert pool["containerSpec"]["imageUri"] == fields["container-image-uri"]
        assert pool["machineSpec"].get("acceleratorType") == fields.get("accelerator-type")
