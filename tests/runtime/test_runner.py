"""The local runner with real processes: success, failures, stopping, Ctrl-C, no leftovers."""
from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.polling import wait_for
from tests.processes import stop
from vxtrain.cli import main
from vxtrain.runtime import runner as local
from vxtrain.errors import LocalRunError, VxtrainError
from vxtrain.model import Job, build

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent.parent
POOL = {"machine_type": "n1-standard-4", "image": "gcr.io/p/train:1"}

#: One script for every replica; what it does comes from $PLAN by replica name:
#: exit:N, sleep:S (then exit 0), await:NAME (until NAME recorded its pid), ignore-term (blocks, ignoring SIGTERM),
#: grandchild (spawns a sleeping child, records its pid, blocks), lines:N (long lines).
#: NAME of await may be a path relative to PID_DIR (another run's replica).
REPLICA_SCRIPT = r'''
import json, os, signal, subprocess, sys, time
from vxtrain import cluster
spec = json.loads(os.environ["CLUSTER_SPEC"])
name = f"{spec['task']['type']}-{spec['task']['index']}"
action = json.loads(os.environ.get("PLAN", "{}")).get(name, "exit:0")
kind, _, arg = action.partition(":")
if kind == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
pids = os.environ.get("PID_DIR")
if pids:
    open(os.path.join(pids, name), "w").write(str(os.getpid()))
info = cluster.current()
ports = sorted(int(h.rsplit(":", 1)[1]) for hosts in spec["cluster"].values() for h in hosts)
print(f"ready {name} role={info.role} index={info.index} trial={info.trial} args={sys.argv[1:]} "
      f"ports={ports} master_port={os.environ.get('MASTER_PORT')}", flush=True)
if kind == "await":
    while not os.path.exists(os.path.join(pids, arg)):
        time.sleep(0.02)
if kind == "exit":
    sys.exit(int(arg))
if kind == "sleep":
    time.sleep(float(arg))
if kind == "ignore-term":
    time.sleep(600)
if kind == "grandchild":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    open(os.path.join(pids, name + "-child"), "w").write(str(child.pid))
    time.sleep(600)
if kind == "lines":
    for i in range(int(arg)):
        print(f"<{name}:{i}:" + "x" * 3000 + ">", flush=False)
'''


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process, using os.kill and /proc."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "replica.py"
    path.write_text(REPLICA_SCRIPT)
    return path


def make_job(script: Path, plan: dict[str, str] | None = None, *, workers: int = 2, ps: int = 0,
             evaluators: int = 0, **top: Any) -> Job:
    data: dict[str, Any] = {
        "display_name": "t", "chief": dict(POOL),
        "local": {"command": ["python", str(script)],
                  "env": {"PLAN": json.dumps(plan or {}), "PID_DIR": str(script.parent)}},
        **top,
    }
    for role, count in (("workers", workers), ("parameter_servers", ps), ("evaluators", evaluators)):
        if count:
            data[role] = {**POOL, "replicas": count}
    return build(data)


class Lines:
    """A thread-safe ``out`` callable that keeps every line."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.errors: list[str] = []  # the lines written through ``error``, also in ``lines``
        self._lock = threading.Lock()

    def __call__(self, text: str) -> None:
        with self._lock:
            self.lines.append(text)

    def error(self, text: str) -> None:
        """An ``err`` output: the line joins ``lines`` in order, and is kept in ``errors``."""
        with self._lock:
            self.lines.append(text)
            self.errors.append(text)

    def of(self, name: str) -> list[str]:
        prefix = f"[{name}] "
        return [line[len(prefix):].rstrip("\n") for line in self.lines if line.startswith(prefix)]

    @property
    def text(self) -> str:
        return "".join(self.lines)


def recorded_pids(folder: Path) -> dict[str, int]:
    return {p.name: int(p.read_text()) for p in folder.iterdir()
            if p.name.startswith("workerpool") and p.read_text()}


def wait_for_pids(folder: Path, count: int, seconds: float) -> int:
    """Wait until ``count`` replicas recorded their pid in ``folder`` (fail after ``seconds``); how many did."""
    wait_for(lambda: len(recorded_pids(folder)) >= count, seconds, f"{count} replicas to record their pid")
    return len(recorded_pids(folder))


def run(job: Job, **kw: Any) -> tuple[local.LocalRunResult, Lines]:
    out = Lines()
    kw.setdefault("grace", 1.0)
    result = local.run_job(job, {"workerPoolSpecs": []}, out=out, **kw)
    return result, out


def test_success_runs_every_replica_with_its_env(script: Path) -> None:
    plan = {"workerpool0-0": "await:workerpool2-0"}  # the ps prints before it is stopped
    result, out = run(make_job(script, plan, workers=2, ps=1, evaluators=1), trial="4")
    assert result.succeeded and result.exit_code == 0 and result.failed_replica is None
    assert [r.name for r in result.replicas] == ["workerpool0-0", "workerpool1-0", "workerpool1-1",
                                                 "workerpool2-0", "workerpool3-0"]
    assert out.of("workerpool1-1")[0].startswith("ready workerpool1-1 role=worker index=1 trial=4")
    assert out.of("workerpool2-0")[0].startswith("ready workerpool2-0 role=ps index=0")
    assert out.of("workerpool3-0")[0].startswith("ready workerpool3-0 role=evaluator index=0")
    assert all(not alive(pid) for pid in recorded_pids(script.parent).values())


def test_a_failing_worker_fails_the_run_and_stops_the_rest(script: Path) -> None:
    plan = {"workerpool0-0": "sleep:60", "workerpool1-0": "sleep:60", "workerpool1-1": "exit:3"}
    started = time.monotonic()
    result, out = run(make_job(script, plan, workers=2))
    assert time.monotonic() - started < 20
    assert not result.succeeded
    assert (result.failed_replica, result.exit_code) == ("workerpool1-1", 3)
    assert "workerpool1-1" in result.message and "code 3" in result.message
    stopped = {r.name for r in result.replicas if r.stopped}
    assert stopped == {"workerpool0-0", "workerpool1-0"}
    assert "[vxtrain] stopped workerpool0-0, workerpool1-0" in out.text
    assert all(not alive(pid) for pid in recorded_pids(script.parent).values())
    assert all(r.pid is not None and not alive(r.pid) for r in result.replicas)


def test_a_failing_chief_fails_the_run(script: Path) -> None:
    result, _ = run(make_job(script, {"workerpool0-0": "exit:7", "workerpool1-0": "sleep:60"}, workers=1))
    assert (result.succeeded, result.failed_replica, result.exit_code) == (False, "workerpool0-0", 7)


def test_chief_success_stops_a_blocking_parameter_server(script: Path) -> None:
    started = time.monotonic()
    result, out = run(make_job(script, {"workerpool2-0": "sleep:600"}, workers=1, ps=1))
    assert result.succeeded
    assert time.monotonic() - started < 15
    ps = result.replicas[-1]
    assert (ps.name, ps.stopped, ps.exit_code) == ("workerpool2-0", True, -signal.SIGTERM)
    assert ps.pid is not None and not alive(ps.pid)


def test_a_replica_ignoring_sigterm_is_killed_after_the_grace(script: Path) -> None:
    plan = {"workerpool2-0": "ignore-term", "workerpool0-0": "await:workerpool2-0"}
    result, _ = run(make_job(script, plan, workers=0, ps=1), grace=0.5)
    assert result.succeeded
    assert result.replicas[-1].exit_code == -signal.SIGKILL


def test_grandchildren_do_not_outlive_the_run(script: Path) -> None:
    plan = {"workerpool1-0": "grandchild", "workerpool0-0": "await:workerpool1-0-child"}
    result, _ = run(make_job(script, plan, workers=1))
    assert result.succeeded
    pids = recorded_pids(script.parent)
    assert "workerpool1-0-child" in pids
    assert not alive(pids["workerpool1-0-child"]) and not alive(pids["workerpool1-0"])


def test_an_evaluator_failure_does_not_fail_the_job(script: Path) -> None:
    plan = {"workerpool3-0": "exit:2", "workerpool0-0": "sleep:2"}
    result, out = run(make_job(script, plan, workers=0, evaluators=1))
    assert result.succeeded
    assert "workerpool3-0 (evaluators) exited with code 2" in out.text


def test_stop_from_another_thread_cancels_and_cleans_up(script: Path) -> None:
    job = make_job(script, {"workerpool0-0": "sleep:600", "workerpool1-0": "sleep:600"}, workers=1)
    stop, out, box = threading.Event(), Lines(), {}
    worker = threading.Thread(target=lambda: box.update(r=local.run_job(job, {}, stop=stop, out=out)))
    worker.start()
    wait_for_pids(script.parent, 2, 15)
    stop.set()
    worker.join(timeout=15)
    assert not worker.is_alive()
    result = box["r"]
    assert result.cancelled and not result.succeeded
    assert all(r.stopped for r in result.replicas)
    assert all(not alive(pid) for pid in recorded_pids(script.parent).values())


def test_output_lines_are_prefixed_and_never_interleaved(script: Path) -> None:
    plan = {"workerpool0-0": "lines:200", "workerpool1-0": "lines:200", "workerpool1-1": "lines:200"}
    result, out = run(make_job(script, plan, workers=2))
    assert result.succeeded
    for name in ("workerpool0-0", "workerpool1-0", "workerpool1-1"):
        body = [line for line in out.of(name) if line.startswith("<")]
        assert len(body) == 200
        assert all(line == f"<{name}:{i}:" + "x" * 3000 + ">" for i, line in enumerate(body))
    assert all(line.startswith("[") and line.endswith("\n") for line in out.lines)


def test_reduction_server_replicas_are_not_started(script: Path) -> None:
    job = make_job(script, {"workerpool0-0": "await:workerpool1-0"}, workers=1,
                   reduction_server={"replicas": 2})
    result, out = run(job)
    assert result.succeeded
    assert [r.name for r in result.replicas] == ["workerpool0-0", "workerpool1-0"]
    assert "Reduction Server (workerpool2, 2 replica(s)) is not started locally" in out.text
    cluster_line = out.of("workerpool1-0")[0]
    assert cluster_line.startswith("ready workerpool1-0 role=worker")


def test_torch_variables_for_chief_and_workers_only(tmp_path: Path) -> None:
    code = ("import os; print(*[os.environ.get(k, '-') for k in "
            "('MASTER_ADDR', 'MASTER_PORT', 'WORLD_SIZE', 'RANK')])")
    slow = "import time; time.sleep(1); " + code  # the parameter server prints before it is stopped
    job = build({"display_name": "t", "chief": {**POOL, "command": ["python", "-c", slow]},
                 "workers": {**POOL, "replicas": 2, "command": ["python", "-c", code]},
                 "parameter_servers": {**POOL, "command": ["python", "-c", code]}})
    result, out = run(job)
    assert result.succeeded
    rows = {name: out.of(name)[0].split() for name in ("workerpool0-0", "workerpool1-0", "workerpool1-1")}
    assert {r[0] for r in rows.values()} == {"127.0.0.1"} and len({r[1] for r in rows.values()}) == 1
    assert [rows[n][2:] for n in sorted(rows)] == [["3", "0"], ["3", "1"], ["3", "2"]]
    assert out.of("workerpool2-0")[0] == "- - - -"


def test_hosts_are_distinct_free_ports_on_loopback(script: Path) -> None:
    job = make_job(script, workers=3, ps=2)
    hosts = local.local_hosts(job)
    flat = [h for pool in hosts.values() for h in pool]
    assert len(flat) == 6 and len(set(flat)) == 6
    assert all(h.startswith("127.0.0.1:") for h in flat)


def test_container_command_and_args_run_when_there_is_no_local_command(tmp_path: Path) -> None:
    job = build({"display_name": "t", "chief": {
        **POOL, "command": ["python", "-c", "import sys; print('argv', sys.argv[1:])"], "args": ["--a=1"]}})
    result, out = run(job, extra_args=["--lr=0.1"])
    assert result.succeeded
    assert out.of("workerpool0-0") == ["argv ['--a=1', '--lr=0.1']"]


def test_stderr_goes_to_err_and_keeps_its_place_after_what_was_printed_before() -> None:
    """A replica that prints and then fails: its traceback (stderr) comes after its last
    printed lines, every time, though the two streams are read apart."""
    code = "import sys\nfor i in range(300): print('step', i)\nsys.exit('out of memory')"
    for _ in range(5):
        out = Lines()
        job = build({"display_name": "t", "chief": {**POOL, "command": ["python", "-c", code]}})
        result = local.run_job(job, {"workerPoolSpecs": []}, out=out, err=out.error, grace=1.0)
        assert not result.succeeded
        assert out.of("workerpool0-0") == [f"step {i}" for i in range(300)] + ["out of memory"]
        assert out.errors == ["[workerpool0-0] out of memory\n"]


def test_python_package_runs_its_module_from_a_local_folder(tmp_path: Path) -> None:
    pkg = tmp_path / "src" / "trainer"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("import os; print('task in', os.getcwd())")
    job = build({"display_name": "t", "chief": {"machine_type": "n1-standard-4", "python_package": {
        "executor_image": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest",
        "package_uris": ["src"], "module": "trainer.task"}}, "local": {"workdir": "run"}})
    (tmp_path / "run").mkdir()
    result, out = run(job, base_dir=tmp_path)
    assert result.succeeded, out.text
    assert out.of("workerpool0-0") == [f"task in {tmp_path / 'run'}"]


def test_a_pool_with_nothing_to_run_is_a_clear_error() -> None:
    job = build({"display_name": "t", "chief": dict(POOL)})
    with pytest.raises(LocalRunError, match="set local.command"):
        local.run_job(job, {}, out=Lines())


def test_a_command_that_cannot_start_leaves_nothing_running(script: Path) -> None:
    job = build({"display_name": "t", "chief": {**POOL, "command": ["python", str(script)]},
                 "workers": {**POOL, "command": ["/nonexistent/trainer"]},
                 "local": {"env": {"PLAN": json.dumps({"workerpool0-0": "sleep:600"}),
                                   "PID_DIR": str(script.parent)}}})
    with pytest.raises(LocalRunError, match="workerpool1-0: cannot start '/nonexistent/trainer'"):
        local.run_job(job, {}, out=Lines(), grace=0.5)
    assert all(not alive(pid) for pid in recorded_pids(script.parent).values())


def _spec_file(tmp_path: Path, script: Path, plan: dict[str, str]) -> Path:
    spec = {"display_name": "ctrl-c", "chief": dict(POOL), "workers": {**POOL, "replicas": 2},
            "parameter_servers": {**POOL, "replicas": 1},
            "local": {"command": ["python", str(script)],
                      "env": {"PLAN": json.dumps(plan), "PID_DIR": str(tmp_path)}}}
    path = tmp_path / "job.yaml"
    path.write_text(json.dumps(spec))  # JSON is YAML
    return path


def _cli(*args: str, **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "vxtrain", *args], cwd=ROOT, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, **kw)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGHUP], ids=["ctrl-c", "hangup"])
def test_ctrl_c_or_hangup_stops_every_replica_and_exits_130(tmp_path: Path, script: Path,
                                                            signum: int) -> None:
    """Ctrl-C, or a closed terminal: the replicas run in their own sessions, so a
    hang-up reaches vxtrain only, and vxtrain must stop them all."""
    plan = {"workerpool0-0": "sleep:600", "workerpool1-0": "sleep:600",
            "workerpool1-1": "ignore-term", "workerpool2-0": "grandchild"}
    proc = _cli("local-run", str(_spec_file(tmp_path, script, plan)),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_for_pids(tmp_path, 5, 30) == 5, "replicas did not start"
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 130, stderr
        assert "cancelled: every replica was stopped" in stdout
        assert "Traceback" not in stderr
        assert all(not alive(pid) for pid in recorded_pids(tmp_path).values())
    finally:
        for pid in recorded_pids(tmp_path).values():
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
def test_cli_exit_codes_success_and_failed_replica(tmp_path: Path, script: Path) -> None:
    ok = _cli("local-run", str(_spec_file(tmp_path, script, {})),
              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, _ = ok.communicate(timeout=60)
    assert ok.returncode == 0 and "[vxtrain] succeeded" in out
    bad = _cli("local-run", str(_spec_file(tmp_path, script, {"workerpool1-1": "exit:5",
                                                               "workerpool0-0": "sleep:60"})),
               "--output", "json", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = bad.communicate(timeout=60)
    assert bad.returncode == 3
    doc = json.loads(out)
    assert (doc["failed_replica"], doc["exit_code"], doc["succeeded"]) == ("workerpool1-1", 5, False)
    assert "[workerpool1-1] ready" in err


def test_quickstart_example_runs_through_the_cli() -> None:
    proc = _cli("local-run", "configs/examples/quickstart.yaml", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "[workerpool0-0] chief: all 2 workers reported; done" in out
    assert "[workerpool1-1] worker 1: chief says welcome" in out


def test_cluster_variables_of_the_caller_do_not_leak(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TF_CONFIG", '{"task": {"type": "worker", "index": 9}}')
    monkeypatch.setenv("RANK", "9")
    monkeypatch.setenv("AIP_MODEL_DIR", "gs://stale/")
    code = "import os; print(*[os.environ.get(k, '-') for k in ('TF_CONFIG', 'AIP_MODEL_DIR', 'RANK')])"
    job = build({"display_name": "t", "chief": {**POOL, "command": ["python", "-c", code]}})
    result, out = run(job, workdir=tmp_path)
    assert result.succeeded
    assert out.of("workerpool0-0") == ["- - 0"]


# --- runs side by side (the emulator runs several jobs, a study several trials) ------------------

class ReusingKernel:
    """A stand-in for the kernel's ``bind(0)``: the lowest port no open socket holds.

    Linux may hand a port out again as soon as it is released; this kernel
    always does, which turns every port race into a certain collision.
    """

    def __init__(self) -> None:
        self.bound: set[int] = set()

    def socket(self, *args: Any) -> Any:
        kernel, box = self, {"port": 0}

        def bind(address: tuple[str, int]) -> None:
            box["port"] = min(set(range(40000, 40200)) - kernel.bound)
            kernel.bound.add(box["port"])

        return SimpleNamespace(bind=bind, getsockname=lambda: ("127.0.0.1", box["port"]),
                               close=lambda: kernel.bound.discard(box["port"]))


@pytest.fixture
def reusing_kernel(monkeypatch: pytest.MonkeyPatch) -> ReusingKernel:
    kernel = ReusingKernel()
    monkeypatch.setattr(local, "socket", SimpleNamespace(socket=kernel.socket, AF_INET=0, SOCK_STREAM=0))
    return kernel


def ready_ports(out: Lines, name: str) -> tuple[list[int], str]:
    """The cluster ports and MASTER_PORT a replica printed in its ``ready`` line."""
    line = next(line for line in out.of(name) if line.startswith("ready "))
    ports = json.loads(line.split(" ports=", 1)[1].split(" master_port=")[0])
    return ports, line.rsplit(" master_port=", 1)[1]


def test_master_port_is_none_of_the_replica_ports(script: Path, reusing_kernel: ReusingKernel) -> None:
    plans = local.plan_replicas(make_job(script, workers=2, ps=1), {}, base_dir=script.parent)
    spec = json.loads(plans[0].env["CLUSTER_SPEC"])
    ports = [h.rsplit(":", 1)[1] for hosts in spec["cluster"].values() for h in hosts]
    assert len(set(ports)) == 4 and plans[0].env["MASTER_PORT"] not in ports


def test_runs_at_once_never_share_a_port_and_release_theirs(tmp_path: Path, reusing_kernel: ReusingKernel) -> None:
    runs = {}
    for me, other in (("a", "b"), ("b", "a")):  # each chief waits until the other run's chief started
        folder = tmp_path / me
        folder.mkdir()
        (folder / "replica.py").write_text(REPLICA_SCRIPT)
        runs[me] = make_job(folder / "replica.py", {"workerpool0-0": f"await:../{other}/workerpool0-0"}, workers=1)
    results = two_runs_at_once(runs["a"], runs["b"], Lines(), Lines())
    used = []
    for result, out in results:
        assert result.succeeded, out.text
        ports, master = ready_ports(out, "workerpool0-0")
        assert ready_ports(out, "workerpool1-0") == (ports, master)
        used.append(set(ports) | {int(master)})
    assert len(used[0]) == len(used[1]) == 3 and not used[0] & used[1]
    assert not local._RESERVED_PORTS  # given back: later runs may use them again


def two_runs_at_once(job_a: Job, job_b: Job, out_a: Any, out_b: Any) -> list[tuple[local.LocalRunResult, Any]]:
    box: dict[str, local.LocalRunResult] = {}
    threads = [threading.Thread(target=lambda k=k, j=j, o=o: box.update({k: local.run_job(j, {}, out=o, grace=1.0)}))
               for k, j, o in (("a", job_a, out_a), ("b", job_b, out_b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    return [(box["a"], out_a), (box["b"], out_b)]


class CharStream:
    """A text stream whose ``write`` goes out one character at a time, letting other threads in."""

    def __init__(self) -> None:
        self.chars: list[str] = []

    def write(self, text: str) -> int:
        for ch in text:
            self.chars.append(ch)
            time.sleep(0)
        return len(text)

    def flush(self) -> None:
        pass


def test_runs_at_once_into_one_stream_never_interleave_lines(tmp_path: Path) -> None:
    jobs = []
    for me in ("a", "b"):
        folder = tmp_path / me
        folder.mkdir()
        (folder / "replica.py").write_text(REPLICA_SCRIPT)
        jobs.append(make_job(folder / "replica.py", {"workerpool0-0": "lines:20"}, workers=0))
    stream = CharStream()
    for result, _ in two_runs_at_once(jobs[0], jobs[1], stream, stream):
        assert result.succeeded
    lines = "".join(stream.chars).splitlines()
    body = [line for line in lines if "<" in line]
    assert len(body) == 40
    assert all(re.fullmatch(r"\[workerpool0-0\] <workerpool0-0:\d+:x{3000}>", line) for line in body)
    assert all(line.startswith(("[workerpool", "[vxtrain] ")) for line in lines)


def test_under_nohup_a_hangup_does_not_stop_the_run(tmp_path: Path, script: Path) -> None:
    plan = {name: "sleep:600" for name in ("workerpool0-0", "workerpool1-0", "workerpool1-1", "workerpool2-0")}
    nohup = ("import os, signal, sys; signal.signal(signal.SIGHUP, signal.SIG_IGN); "
             "os.execv(sys.executable, [sys.executable, '-m', 'vxtrain', *sys.argv[1:]])")
    proc = subprocess.Popen([sys.executable, "-c", nohup, "local-run", str(_spec_file(tmp_path, script, plan))],
                            cwd=ROOT, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_for_pids(tmp_path, 4, 30) == 4, "replicas did not start"
        proc.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        assert proc.poll() is None and all(alive(pid) for pid in recorded_pids(tmp_path).values())
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 130, stderr
        assert all(not alive(pid) for pid in recorded_pids(tmp_path).values())
    finally:
        stop(proc, signal.SIGKILL, timeout=5)  # killed and reaped
        for pid in recorded_pids(tmp_path).values():
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


TPU_NOTE = ("[vxtrain] warning: chief asks for a TPU (ct5lp-hightpu-4t, 2x4): TPUs are not emulated locally; "
            "it runs on the CPU")


def test_a_tpu_pool_runs_on_the_cpu_and_says_so_once(script: Path) -> None:
    job = make_job(script, workers=0)
    chief = job.pools["chief"]
    chief.machine_type, chief.tpu_topology = "ct5lp-hightpu-4t", "2x4"
    result, out = run(job)
    assert result.succeeded and [r.name for r in result.replicas] == ["workerpool0-0"]
    assert out.text.count("TPUs are not emulated locally") == 1 and TPU_NOTE + "\n" in out.lines
    assert out.of("workerpool0-0")[0].startswith("ready workerpool0-0 role=chief")


def test_tpu_notes_name_the_slice_and_skip_other_pools() -> None:
    cloud_tpu = build({"display_name": "t", "chief": {"machine_type": "cloud-tpu", "image": "i",
                                                      "accelerator": {"type": "TPU_V3", "count": 8}}})
    assert local.tpu_notes(cloud_tpu) == [
        "chief asks for a TPU (cloud-tpu, 8 x TPU_V3): TPUs are not emulated locally; it runs on the CPU"]
    no_size = build({"display_name": "t", "chief": {"machine_type": "ct6e-standard-1t", "image": "i"}})
    assert local.tpu_notes(no_size) == [
        "chief asks for a TPU (ct6e-standard-1t): TPUs are not emulated locally; it runs on the CPU"]
    assert local.tpu_notes(build({"display_name": "t", "chief": dict(POOL)})) == []


def test_local_run_of_a_tpu_spec_through_the_cli(tmp_path: Path) -> None:
    spec = tmp_path / "tpu.yaml"
    spec.write_text(f"""display_name: v5e
chief:
  machine_type: ct5lp-hightpu-4t
  tpu_topology: 2x4
  image: us-docker.pkg.dev/p/t/jax:1
local:
  command: [python, -c, "import os; print('tf_config' if 'TF_CONFIG' in os.environ else 'no tf_config')"]
""")
    proc = _cli("local-run", str(spec), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert TPU_NOTE in out and "[workerpool0-0] no tf_config" in out


# --- what the host can start (issue 27) ------------------------------------------------------

def _huge(tmp_path: Path, replicas: int, study: str = "") -> Path:
    spec = tmp_path / "huge.yaml"
    spec.write_text("display_name: t\nchief: {machine_type: n1-standard-4, image: i}\n"
                    f"workers: {{machine_type: n1-standard-4, image: i, replicas: {replicas}}}\n"
                    f"local: {{command: [\"{sys.executable}\", \"-c\", \"pass\"]}}\n{study}")
    return spec


@pytest.mark.parametrize("replicas", [1_000_000_000, 100_000, 300])
def test_a_local_run_past_what_the_host_starts_is_refused_before_anything_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], replicas: int) -> None:
    started = time.monotonic()
    assert main(["local-run", str(_huge(tmp_path, replicas))]) == 1
    err = capsys.readouterr().err
    assert f"would start {replicas + 1:,} replica processes on this host, more than 256" in err
    assert "VXTRAIN_LOCAL_MAX_REPLICAS" in err and "Nothing was started" in err
    assert time.monotonic() - started < 30  # no port, GPU or CLUSTER_SPEC per replica first


def test_the_bound_is_raised_by_its_variable_but_not_past_the_hosts_open_files(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(local.MAX_LOCAL_REPLICAS_ENV, "100000000")
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if files == resource.RLIM_INFINITY:
        pytest.skip("no open-file limit on this host")
    local.check_host_can_start((files - local.FILES_FOR_VXTRAIN) // local.FILES_PER_REPLICA, "the job")
    with pytest.raises(VxtrainError, match=r"open-file limit .*ulimit -n"):
        local.check_host_can_start(files, "the job")
    monkeypatch.setenv(local.MAX_LOCAL_REPLICAS_ENV, "lots")
    with pytest.raises(VxtrainError, match="VXTRAIN_LOCAL_MAX_REPLICAS='lots'"):
        local.check_host_can_start(1, "the job")


def test_env_of_a_huge_job_builds_no_giant_cluster_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", str(_huge(tmp_path, 1_000_000_000)), "--replica", "workerpool1:0"]) == 1
    assert "1,000,000,001 replicas: its CLUSTER_SPEC" in capsys.readouterr().err


def test_a_local_study_of_a_billion_trials_is_refused_and_one_trial_of_it_draws_only_its_own(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    study = ("study:\n  metric: {id: acc, goal: maximize}\n  parameters: {lr: {type: double, min: 0.1, max: 0.5}}\n"
             "  max_trials: 1000000000\n  parallel_trials: 1\n")
    spec = _huge(tmp_path, 1, study)
    assert main(["local-run", str(spec)]) == 1
    assert "asks for 1,000,000,000 trials; a local study runs at most 10,000" in capsys.readouterr().err
    assert main(["local-run", str(spec), "--trial", "3"]) == 0
    assert main(["local-run", str(spec), "--trial", "20000"]) == 2
