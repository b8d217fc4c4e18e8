"""Every example README.md shows runs as shown.

The README's fenced blocks are read in order (docs/development.md, "The README's
examples are tested"):

* ```yaml after ``<!-- file: NAME -->``: written to NAME in a scratch folder that
  also holds a copy of ``configs/``;
* ```bash: each ``vxtrain ...`` command (each part of a line between ``&&``) runs in
  that folder and exits 0; the other parts must be install steps listed below;
* ```console: each ``$ vxtrain ...`` line runs there, and what it prints (stdout,
  then stderr) is exactly the lines under it;
* after ``<!-- not run: REASON -->``: skipped. Any other block fails the first test,
  so a new example cannot go untested by accident.

Commands run as ``python -m vxtrain`` with this interpreter and this tree first on
``PYTHONPATH``, so from an unpacked sdist they test that copy of the package.
"""
from __future__ import annotations

import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest itself depends on tomli before 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

#: The install steps the README's first command chains before the quickstart. They
#: are not run here (a venv and a networked install per test run); .ci/run installs
#: exactly so, and tests/test_lock.py checks that every install uses the lock.
SETUP_STEPS = {
    PYTHON_CHECK := """python3 -c 'import sys; sys.exit(sys.version_info < (3, 11) and "vxtrain needs """
                    """Python 3.11 or newer; python3 is " + sys.version.split()[0])'""",
    "python3 -m venv .venv",
    ". .venv/bin/activate",
    "pip install -c requirements/lock.txt -e '.[test]'",
}
#: Seconds for one command (the quickstart's local job takes a few).
TIMEOUT = 180

_FENCE = re.compile(r"^```(\S*)\s*$")
_MARK = re.compile(r"^<!--\s*(file|not run):\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    lang: str
    text: str
    line: int  #: of the opening fence, 1-based
    file: str | None = None  #: <!-- file: NAME -->
    skip: str | None = None  #: <!-- not run: REASON -->

    @property
    def kind(self) -> str:
        if self.skip is not None:
            return "skipped"
        if self.lang == "yaml" and self.file:
            return "file"
        if self.lang in ("bash", "console") and self.file is None:
            return self.lang
        return "unmarked"


def parse(text: str) -> tuple[list[Block], list[int]]:
    """The fenced blocks of ``text``, and the lines of markers no block follows."""
    lines = text.splitlines()
    blocks: list[Block] = []
    stray: list[int] = []
    mark: tuple[str, str, int] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        found = _MARK.match(line)
        fence = _FENCE.match(line)
        if found:
            if mark:
                stray.append(mark[2])
            mark = (found.group(1), found.group(2), i + 1)
        elif fence:
            end = i + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            kind, value = (mark[0], mark[1]) if mark else ("", "")
            blocks.append(Block(fence.group(1), "".join(s + "\n" for s in lines[i + 1:end]), i + 1,
                                file=value if kind == "file" else None,
                                skip=value if kind == "not run" else None))
            mark = None
            i = end
        elif line.strip() and mark:
            stray.append(mark[2])
            mark = None
        i += 1
    if mark:
        stray.append(mark[2])
    return blocks, stray


BLOCKS, STRAY = parse(README.read_text(encoding="utf-8"))


def _of(kind: str) -> list[Block]:
    return [b for b in BLOCKS if b.kind == kind]


def _ids(blocks: list[Block]) -> list[str]:
    return [f"README.md:{b.line}" for b in blocks]


def test_every_block_is_run_or_says_why() -> None:
    """Each block is a file, a command block, a console session, or says why it is not run."""
    assert STRAY == [], "markers with no block right after them (README.md lines)"
    assert [f"README.md:{b.line} ```{b.lang}" for b in BLOCKS if b.kind == "unmarked"] == []
    names = [b.file for b in _of("file")]
    assert len(names) == len(set(names)), names
    # The first screens show a spec and run commands; an empty parse would pass vacuously.
    assert _of("file") and _of("bash") and _of("console")


def test_the_parser_reads_markers_strictly() -> None:
    blocks, stray = parse("<!-- file: a.yaml -->\n```yaml\nx: 1\n```\n<!-- not run: why -->\n\n"
                          "```bash\nvxtrain x\n```\n<!-- file: b.yaml -->\ntext\n```yaml\n```\n"
                          "```text\nhi\n```\n")
    assert [(b.kind, b.file, b.skip, b.line) for b in blocks] == [
        ("file", "a.yaml", None, 2), ("skipped", None, "why", 7), ("unmarked", None, None, 12),
        ("unmarked", None, None, 14)]
    assert stray == [10]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a copy of configs/ (and requirements/, which configs/vxtrain-image.yaml
    installs from) and every file the README names."""
    where = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "configs", where / "configs")
    shutil.copytree(ROOT / "requirements", where / "requirements")
    for block in _of("file"):
        assert block.file and "/" not in block.file, block.file
        (where / block.file).write_text(block.text, encoding="utf-8")
    return where


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command)
    assert argv[0] == "vxtrain", command
    # The README's ${VARIABLES} come from its flags, never from this environment.
    shown = {name for block in _of("file") for name in re.findall(r"\$\{(\w+)", block.text)}
    env = {k: v for k, v in os.environ.items() if k not in {"FORCE_COLOR", *shown}}
    env.update(NO_COLOR="1", COLUMNS="80",
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])]))
    return subprocess.run([sys.executable, "-m", "vxtrain", *argv[1:]], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)


def _commands(block: Block) -> list[str]:
    """The vxtrain commands of a bash block; fails on any step that is neither."""
    commands: list[str] = []
    for line in block.text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        for step in (s.strip() for s in line.split(" && ")):
            if step.startswith("vxtrain "):
                commands.append(step)
            else:
                assert step in SETUP_STEPS, f"README.md:{block.line}: not a vxtrain command: {step}"
    return commands


@pytest.mark.slow
@pytest.mark.parametrize("block", _of("bash"), ids=_ids(_of("bash")))
def test_the_commands_shown_run(block: Block, scratch: Path) -> None:
    commands = _commands(block)
    assert commands, f"README.md:{block.line} runs no vxtrain command"
    for command in commands:
        done = _run(command, scratch)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"


def _sessions(block: Block) -> list[tuple[str, str]]:
    """(command, what it prints) for each ``$ `` line of a console block."""
    sessions: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            sessions.append((line[2:], []))
        else:
            assert sessions, f"README.md:{block.line}: output before any command"
            sessions[-1][1].append(line)
    return [(command, "".join(s + "\n" for s in lines)) for command, lines in sessions]


@pytest.mark.slow
@pytest.mark.parametrize("block", _of("console"), ids=_ids(_of("console")))
def test_the_output_shown_is_what_vxtrain_prints(block: Block, scratch: Path) -> None:
    for command, shown in _sessions(block):
        done = _run(command, scratch)
        assert done.stdout + done.stderr == shown, command


def test_the_fast_tier_is_named_and_ci_runs_every_tier() -> None:
    """The README and docs/development.md name ``-m "not slow"`` for the edit-test loop; the
    marker only leaves tests out where asked: no default option and no CI line selects by it."""
    fast = '.venv/bin/python -m pytest -q -m "not slow"'
    assert fast + "\n" in [b.text for b in BLOCKS]
    assert fast in (ROOT / "docs" / "development.md").read_text()
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "slow" in " ".join(options["markers"]) and "-m" not in options["addopts"].split()
    runs = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "pytest" in line
            and not line.lstrip().startswith("#") and "echo" not in line]
    selecting = [line for line in runs if {"-m", "-k"} & set(line.split("pytest", 1)[1].split())]
    assert runs and selecting == [], runs


def test_the_install_command_ends_in_the_quickstart() -> None:
    """The README's first command: install, then the quickstart (CI and other tests rely
    on its exact shape); the test command is the README's other one."""
    first = next(b for b in BLOCKS if b.lang == "bash")
    assert first.text.strip().split(" && ") == [
        PYTHON_CHECK, "python3 -m venv .venv", ". .venv/bin/activate",
        "pip install -c requirements/lock.txt -e '.[test]'",
        "vxtrain submit configs/examples/quickstart.yaml --target local --wait"]
    assert ".venv/bin/python -m pytest -q\n" in [b.text for b in BLOCKS]


#: What differs from one run of the quickstart to the next: its job's id, times and cost.
_PER_RUN = [(re.compile(r"customJobs/\d+"), "customJobs/ID"), (re.compile(r"training/\d+/"), "training/ID/"),
            (re.compile(r"after \d+(\.\d+)? s\b"), "after T s"), (re.compile(r"created: \S+"), "created: TIME"),
            (re.compile(r"\$\d+(\.\d+)?"), "$N"), (re.compile(r"\d+(\.\d+)? min run"), "M min run")]


def _normalized(text: str) -> list[str]:
    lines = text.splitlines()
    for pattern, stands_for in _PER_RUN:
        lines = [pattern.sub(stands_for, line) for line in lines]
    return lines


@pytest.mark.slow
def test_the_quickstart_prints_what_the_readme_shows(scratch: Path) -> None:
    """The quickstart's output as the README shows it (stderr's progress, then stdout's job):
    the same lines, with its id, times and cost normalized; vxtrain's own lines in the same
    order, the replicas' in any (they run at once). About 4 s: it runs three processes."""
    (shown,) = [b for b in BLOCKS if b.lang == "console" and b.skip is not None
                and b.text.startswith("$ vxtrain submit configs/examples/quickstart.yaml ")]
    ((command, printed),) = _sessions(shown)
    first = next(b for b in BLOCKS if b.lang == "bash")
    assert first.text.strip().endswith(command)
    done = _run(command, scratch)
    assert done.returncode == 0, done.stdout + done.stderr
    expected, got = _normalized(printed), _normalized(done.stderr + done.stdout)
    assert sorted(got) == sorted(expected)
    assert [s for s in got if not s.startswith("[")] == [s for s in expected if not s.startswith("[")]


def _project() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_install_command_checks_the_python_first() -> None:
    """Its first step passes on this Python and, under a Python below requires-python's
    floor, stops naming the Python: pip alone says ResolutionImpossible about a locked
    package there (the README says what that means)."""
    (floor,) = [s.version for s in SpecifierSet(str(_project()["requires-python"])) if s.operator == ">="]
    major, minor = (int(n) for n in floor.split("."))
    argv = shlex.split(PYTHON_CHECK)
    assert argv[:2] == ["python3", "-c"] and f"< ({major}, {minor})" in argv[2]
    assert f"needs Python {floor} or newer" in argv[2]
    passed = subprocess.run([sys.executable, "-c", argv[2]], capture_output=True, text=True)
    assert (passed.returncode, passed.stderr) == (0, "")
    # This Python as the one too old: the floor one minor above it.
    here = sys.version_info
    older = argv[2].replace(f"({major}, {minor})", f"({here.major}, {here.minor + 1})")
    refused = subprocess.run([sys.executable, "-c", older], capture_output=True, text=True)
    assert (refused.returncode, refused.stderr) == (
        1, f"vxtrain needs Python {floor} or newer; python3 is {platform.python_version()}\n")
    assert "ResolutionImpossible" in README.read_text()


def test_the_readme_states_the_pythons_the_package_admits() -> None:
    """'Python 3.N or newer' is requires-python's floor, and the classifiers start there."""
    stated = re.findall(r"Python (3\.\d+) or newer", README.read_text())
    assert len(set(stated)) == 1, stated
    floor = [s.version for s in SpecifierSet(str(_project()["requires-python"])) if s.operator == ">="]
    assert floor == [stated[0]]
    prefix = "Programming Language :: Python :: 3."
    minors = sorted(Version(c.rsplit(" :: ", 1)[1]) for c in _project()["classifiers"]
                    if c.startswith(prefix) and c[len(prefix):].isdigit())
    assert minors and minors[0] == Version(stated[0])


def test_the_pre_commit_snippet_pins_this_release() -> None:
    """Its rev is this version's tag (a tag of this repository when it is a checkout with
    tags), and its hook is one .pre-commit-hooks.yaml defines; docs/ci.md's agrees."""
    snippets = [yaml.safe_load(b.text) for b in BLOCKS if b.lang == "yaml" and "repos:" in b.text]
    assert len(snippets) == 1
    (repo,) = snippets[0]["repos"]
    rev = f"v{_project()['version']}"
    assert repo["rev"] == rev
    defined = {hook["id"] for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert {hook["id"] for hook in repo["hooks"]} <= defined
    assert re.findall(r"^\s+rev: (\S+)", (ROOT / "docs" / "ci.md").read_text(), re.M) == [rev]
    if shutil.which("git") is None:
        return
    tags = subprocess.run(["git", "tag", "--list"], cwd=ROOT, capture_output=True, text=True)
    if tags.returncode != 0 or not tags.stdout.strip():
        pytest.skip("not a git checkout with tags: the tag itself is not checked")
    assert rev in tags.stdout.split(), f"tag the release: git tag -a {rev}"


def test_the_repository_is_named_where_vxtrain_is_installed_from() -> None:
    """pyproject's Project-URLs name the repository; the clone, the pre-commit snippets and
    the CI recipes install from that one (no package index has vxtrain), never a
    placeholder owner or a bare ``pip install vxtrain``."""
    urls = _project()["urls"]
    assert isinstance(urls, dict) and {"Homepage", "Repository", "Issues"} <= set(urls), urls
    home = urls["Repository"]
    assert re.fullmatch(r"https://github\.com/[\w.-]+/vxtrain", home), home
    assert f"git clone {home} " in README.read_text()
    texts = {path: path.read_text() for path in [README, ROOT / ".pre-commit-hooks.yaml",
                                                 *(ROOT / "docs").glob("*.md"),
                                                 *(ROOT / "docs" / "ci").iterdir()]}
    named = {(path.name, url) for path, text in texts.items()
             for url in re.findall(r"https://github\.com/[\w.-]+/vxtrain\b", text)}
    assert {url for _, url in named} == {home}, named
    # Each pip install command: from "pip install" to the end of its step (or code span).
    installs = [(path.name, step[step.index("pip install"):].split("`")[0]) for path, text in texts.items()
                for line in text.splitlines() for step in re.split(r"&&|;|\|", line)
                if "pip install" in step]
    by_name = [(name, step) for name, step in installs
               # by name: `vxtrain`, `vxtrain[kfp]`, `vxtrain==1`, but not a direct reference
               # (`vxtrain @ git+...`, `vxtrain[kfp] @ git+...`)
               if re.search(r"""(^|\s)["']?vxtrain(?!(\[[\w,]+\])?\s+@)([=<>~!\[\s"']|$)""", step)]
    assert by_name == []
    # docs/ci.md's git and archive lines, Cloud Build's recipe; GitHub's recipe and the README's
    # workflows use the action, which installs from its own checkout (tests/test_action.py).
    assert sum("vxtrain @ " in step for _, step in installs) >= 3, installs


def test_every_local_link_resolves() -> None:
    """The README's links into the repository (docs/, LICENSE) name files that exist."""
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    local = [t for t in targets if "://" not in t]
    assert local
    assert [t for t in local if not (ROOT / t).exists()] == []


def test_the_signed_webhook_receiver_shown_verifies_real_signed_posts(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/submitting.md's receiver, run as shown behind http.server on 127.0.0.1: vxtrain's
    signed POSTs pass, the copy a second sender makes of an event is dropped, and a POST
    signed with another secret is refused."""
    import logging
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from vxtrain.submission.notify import Hook, Notifier

    page = (ROOT / "docs" / "submitting.md").read_text()
    section = page[page.index("## Notifications: signed webhooks"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None and len(code.group(1).strip().splitlines()) <= 14, "ten lines, give or take"
    monkeypatch.setenv("VXTRAIN_HOOK_SECRET", "the-secret")
    shown: dict[str, object] = {}
    exec(compile(code.group(1), "docs/submitting.md", "exec"), shown)  # noqa: S102 - the docs' own code
    got: list[object] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            try:
                got.append(shown["receive"](body, self.headers))  # type: ignore[operator]
                status = 200
            except PermissionError:
                status = 401
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/vxtrain"
    said: list[str] = []
    log = logging.getLogger("tests.readme.receiver")
    log.addHandler(type("Into", (logging.Handler,), {"emit": lambda self, r: said.append(r.getMessage())})())
    event = {"job": "j", "attempt": 1, "rung": 0, "state": "JOB_STATE_FAILED", "cost_usd": None, "text": "again"}
    try:
        for _ in range(2):  # a watcher, then a reconcile pass: the same event
            with Notifier([Hook(url, "the-secret")], log, key="life") as notifier:
                notifier.send("recovering", **event)
        with Notifier([Hook(url, "a-forger")], log, key="life") as notifier:
            notifier.send("succeeded", **event)
    finally:
        server.shutdown()
        server.server_close()
    first, copy = got
    assert isinstance(first, dict) and (first["event"], first["key"], first["version"]) == ("recovering", "life", 1)
    assert copy is None
    assert len(said) == 1 and "HTTP 401" in said[0]  # the forgery refused
