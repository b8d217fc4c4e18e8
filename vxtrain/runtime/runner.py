"""The local backend: every replica of a job as a process on this host.

Each replica gets the environment Vertex AI would give it (:mod:`.cluster_env`)
with hosts on 127.0.0.1 and free ports, plus the PyTorch variables for the
chief and workers. Output is streamed line by line as ``[workerpoolK-I] line``.

Semantics follow Vertex AI: the job ends when the
primary replica (pool 0) ends; a non-zero exit of the chief, a worker or a
parameter server fails it and the rest are stopped; replicas still running
when the chief succeeded (parameter servers block forever by design) are
stopped with SIGTERM, then SIGKILL after a grace period. Every replica runs in
its own process group (``start_new_session``) and the whole group is killed,
so no process outlives ``run_job``; none outlives vxtrain either, even when it
is SIGKILLed (:mod:`.reaper`). Reduction Server replicas are not started:
they are transparent to training code. A pool on a TPU machine runs on this
host's CPU like any other (TPUs are not emulated), and the run warns so once
per pool. Each replica gets its own share of this host's GPUs as its
``CUDA_VISIBLE_DEVICES`` (:mod:`.gpus`), decided before anything starts.

A group is signalled only while it is certainly ours: a replica that has ended
is not reaped (``waitid(WNOWAIT)``) until its group has been killed, so its
leader, a zombie, holds the group's id and no new process can take it.

``run_job`` installs no signal handler, so it can run in any thread; a caller
cancels it by setting ``stop`` (the CLI does that on Ctrl-C).
"""
from __future__ import annotations

import os
import resource
import selectors
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TextIO, TypedDict, Union

from vxtrain import catalog, slots
from vxtrain.errors import LocalRunError, VxtrainError
from vxtrain.model import Job, Pool
from vxtrain.packaging.install import package_path_entries
from vxtrain.sources.folder import import_root, source_folder
from vxtrain.runtime import cluster_env, reaper
from vxtrain.runtime.gpus import VISIBLE, GpuOptions, GpuPlan, resolve

Output = Union[TextIO, Callable[[str], Any]]
#: Seconds between SIGTERM and SIGKILL when stopping replicas.
DEFAULT_GRACE = 3.0
#: Seconds workers and evaluators get to end by themselves once the chief succeeded.
DEFAULT_SETTLE = 1.0
#: Most replica processes one local run starts at once (a study: every trial running at
#: once together). A host runs a few dozen usefully; past this it is a typo (replicas:
#: 100000) that would exhaust processes, memory or open files before Ctrl-C could act.
#: VXTRAIN_LOCAL_MAX_REPLICAS raises it; the host's own limits still apply.
MAX_LOCAL_REPLICAS = 256
MAX_LOCAL_REPLICAS_ENV = "VXTRAIN_LOCAL_MAX_REPLICAS"
#: Open files this process holds per replica it runs (its stdout and stderr pipes, a
#: reserved port), and those it keeps for itself (Python, the loader, gRPC for the emulator).
FILES_PER_REPLICA = 4
FILES_FOR_VXTRAIN = 64
_POLL = 0.05
#: Interpreter names in a command that mean "the Python running vxtrain" locally.
_PYTHON_NAMES = ("python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}")
#: Roles whose non-zero exit fails the job (an evaluator's failure is reported only).
_FATAL_ROLES = ("chief", "workers", "parameter_servers")
#: The folder holding the vxtrain package, put on children's PYTHONPATH so training
#: code can ``import vxtrain.cluster`` even when vxtrain is not installed.
_VXTRAIN_ROOT = str(Path(__file__).resolve().parent.parent.parent)


class ReplicaJson(TypedDict):
    """A replica in local-run's ``--output json``."""

    name: str
    role: str
    pid: int | None
    exit_code: int | None
    stopped: bool
    gpus: list[str]


class RunJson(TypedDict):
    """local-run's ``--output json`` for a job (a study's is runtime.study.StudyJson)."""

    succeeded: bool
    cancelled: bool
    failed_replica: str | None
    exit_code: int | None
    message: str
    replicas: list[ReplicaJson]


@dataclass
class ReplicaRun:
    """One replica process and how it ended."""

    name: str  # workerpool1-0
    role: str
    pool_index: int
    replica_index: int
    command: list[str]
    pid: int | None = None
    exit_code: int | None = None
    stopped: bool = False  # ended by the runner, not by itself
    gpus: list[str] = field(default_factory=list)  # its CUDA_VISIBLE_DEVICES entries

    def to_json(self) -> ReplicaJson:
        """Plain-data form for ``--output json``."""
        return {"name": self.name, "role": self.role, "pid": self.pid,
                "exit_code": self.exit_code, "stopped": self.stopped, "gpus": list(self.gpus)}


@dataclass
class LocalRunResult:
    """How a local run ended."""

    succeeded: bool
    failed_replica: str | None = None
    exit_code: int | None = None
    message: str = ""
    replicas: list[ReplicaRun] = field(default_factory=list)
    cancelled: bool = False

    def to_json(self) -> RunJson:
        """Plain-data form for ``--output json``."""
        return {"succeeded": self.succeeded, "cancelled": self.cancelled,
                "failed_replica": self.failed_replica, "exit_code": self.exit_code,
                "message": self.message, "replicas": [r.to_json() for r in self.replicas]}


#: One lock for every printer of this process: the emulator runs several jobs
#: (and a study several trials) at once, often into the same stream, and a line
#: must reach it whole.
_WRITE_LOCK = threading.RLock()


def write_line(out: Output, text: str) -> None:
    """Write ``text`` (one line) to a stream or a callable while holding the process-wide lock."""
    text = text if text.endswith("\n") else text + "\n"
    with _WRITE_LOCK:
        write = getattr(out, "write", None)
        if callable(write):
            write(text)
            flush = getattr(out, "flush", None)
            if callable(flush):
                flush()
        elif callable(out):
            out(text)


class _Printer:
    """Writes whole lines to the run's output (see :func:`write_line`); what replicas
    print on stderr goes to ``err`` when there is one (the emulator logs it as ERROR)."""

    def __init__(self, out: Output, err: Output | None = None) -> None:
        self._out, self._err = out, err

    def line(self, text: str) -> None:
        write_line(self._out, text)

    def error_line(self, text: str) -> None:
        write_line(self._out if self._err is None else self._err, text)


# --- planning the processes ---------------------------------------------------

#: Ports handed to runs of this process that have not ended yet. Between the
#: moment a port is chosen and the moment a replica binds it, the kernel may
#: hand the same port to the next ``bind(0)``: without this set, two runs at once
#: (emulator jobs, parallel trials) or two draws of one run could share a port.
_RESERVED_PORTS: set[int] = set()
_PORTS_LOCK = threading.Lock()


def free_ports(count: int, *, reserve: bool = False) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1, none reserved by a run still going.

    Every candidate stays bound until all are chosen, so the kernel never
    repeats one; with ``reserve`` the ports stay out of later draws until
    :func:`release_ports`. Another process can still take a port before the
    replica binds it: only the kernel could close that window.
    """
    sockets: list[socket.socket] = []
    chosen: list[int] = []
    with _PORTS_LOCK:
        try:
            while len(chosen) < count:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sockets.append(s)
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
                if port not in _RESERVED_PORTS:
                    chosen.append(port)
            if reserve:
                _RESERVED_PORTS.update(chosen)
            return chosen
        finally:
            for s in sockets:
                s.close()


def release_ports(ports: Iterable[int]) -> None:
    """Give ports reserved by :func:`free_ports` back (their run ended)."""
    with _PORTS_LOCK:
        _RESERVED_PORTS.difference_update(ports)


@dataclass(frozen=True)
class Addresses:
    """The loopback addresses of one run: a host:port per replica, and PyTorch's MASTER_PORT."""

    hosts: dict[int, list[str]]
    master_port: int

    @property
    def ports(self) -> list[int]:
        """Every port of the run (to release when it ends)."""
        return [int(h.rsplit(":", 1)[1]) for hs in self.hosts.values() for h in hs] + [self.master_port]


def draw_addresses(job: Job, *, reserve: bool = False) -> Addresses:
    """Distinct free ports for every replica and the PyTorch rendezvous, drawn at once;
    with ``reserve``, kept from other runs until ``release_ports(addresses.ports)``."""
    counts = cluster_env.pool_replicas(job)
    ports = iter(free_ports(sum(counts.values()) + 1, reserve=reserve))
    hosts = {k: [f"127.0.0.1:{next(ports)}" for _ in range(n)] for k, n in counts.items()}
    return Addresses(hosts, next(ports))


def local_processes(job: Job) -> int:
    """How many processes a local run of ``job`` starts (every replica but the Reduction Server's)."""
    return sum(p.replicas or 0 for p in job.ordered_pools() if p.role != "reduction_server")


def check_host_can_start(processes: int, what: str) -> None:
    """VxtrainError, before anything starts, when ``processes`` replica processes at once are
    more than this host lets this user start (RLIMIT_NPROC), than its open files allow
    (RLIMIT_NOFILE), or than MAX_LOCAL_REPLICAS (VXTRAIN_LOCAL_MAX_REPLICAS): the numbers,
    and what to do. ``what``: the run in words (``the job``, ``the study's 4 trials at once``)."""
    text = os.environ.get(MAX_LOCAL_REPLICAS_ENV, "").strip()
    if text and not text.isdigit():
        raise VxtrainError(f"{MAX_LOCAL_REPLICAS_ENV}={text[:40]!r}: give a whole number of processes, e.g. 512")
    cap = int(text) if text else MAX_LOCAL_REPLICAS
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    procs = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    limits = [(cap, f"the {MAX_LOCAL_REPLICAS_ENV} bound ({cap:,}; raise it to run more here)")]
    if files != resource.RLIM_INFINITY:
        limits.append(((files - FILES_FOR_VXTRAIN) // FILES_PER_REPLICA,
                       f"this host's open-file limit ({files:,}, `ulimit -n`; {FILES_PER_REPLICA} per replica)"))
    if procs != resource.RLIM_INFINITY:
        limits.append((procs, f"this user's process limit ({procs:,}, `ulimit -u`)"))
    most, why = min(limits, key=lambda item: item[0])
    if processes > most:
        raise VxtrainError(f"{what} would start {processes:,} replica processes on this host, more than "
                           f"{max(most, 0):,}: {why}. Nothing was started; lower the replica counts (or "
                           "parallel_trials) for a local run, or submit it to Vertex AI")


def local_hosts(job: Job) -> dict[int, list[str]]:
    """Pool slot → ``127.0.0.1:PORT`` per replica, every port free and distinct."""
    return draw_addresses(job).hosts


def _resolve_python(command: Sequence[str]) -> list[str]:
    """``python`` → this interpreter, so the run uses the environment vxtrain runs in."""
    cmd = list(command)
    if cmd and cmd[0] in _PYTHON_NAMES:
        cmd[0] = sys.executable
    return cmd


def _split(command: Sequence[str]) -> list[str]:
    """``local.command: python train.py`` (one string) → ``[python, train.py]``."""
    return shlex.split(command[0]) if len(command) == 1 else list(command)


def replica_command(job: Job, pool: Pool, extra_args: Sequence[str] = ()) -> list[str]:
    """What a replica runs: ``local.command``, else the container command, else ``python -m``.

    The pool's ``args`` and ``extra_args`` (a trial's ``--name=value``) follow, as
    Vertex AI appends args to the container command.
    """
    tail = list(pool.args) + list(extra_args)
    if job.local is not None and job.local.command:
        return _resolve_python(_split(job.local.command)) + tail
    if pool.command:
        return _resolve_python(pool.command) + tail
    if pool.python_package is not None and pool.python_package.module:
        return [sys.executable, "-m", pool.python_package.module] + tail
    raise LocalRunError(
        f"{pool.role} ({slots.SLOTS[pool.index].cluster_key}) has no command to run here: its image's entrypoint "
        "is not known locally; set local.command (e.g. [python, train.py]) or the pool's command")


def package_paths(pool: Pool, base_dir: Path, work_dir: Path | None = None, *, install: bool = True) -> list[str]:
    """PYTHONPATH entries that make a python_package pool's module importable here.

    ``source``: the folder itself (its ``src/`` for a src layout), no build.
    ``package_uris``: folders as they are; archives (local or gs://) installed with
    ``pip install --no-deps --target`` under ``work_dir``, as Vertex AI's executor
    images install them (vxtrain.packaging.install). With ``install`` False (the
    replica runs ``local.command`` or a command of its own, not the package)
    only folders are used: nothing is downloaded for a command that may not need it.
    """
    pkg = pool.python_package
    if pkg is None:
        return []
    if pkg.source is not None:
        return [str(import_root(source_folder(base_dir, pkg.source), pkg.module))]
    if not pkg.package_uris:
        return []
    if not install:
        folders = [str((base_dir / u).resolve()) for u in pkg.package_uris if "://" not in u]
        return [f for f in folders if Path(f).is_dir()]
    return package_path_entries(pkg.package_uris, base_dir, work_dir)


def image_source(job: Job, pool: Pool, base_dir: Path) -> Path | None:
    """The folder a ``build:`` pool's image is built from: local runs run it in place
    (its working directory, on PYTHONPATH), as Vertex AI runs the image (docs/container-path.md)."""
    if pool.build is not None and pool.build.source:
        return source_folder(base_dir, pool.build.source)
    if job.local is not None and pool.image in job.local.image_sources:
        return Path(job.local.image_sources[pool.image])  # an emulator: the submit said where it is
    return None


@dataclass
class _Plan:
    replica: ReplicaRun
    env: dict[str, str]
    cwd: Path


def _workdir(job: Job, base_dir: Path, workdir: str | Path | None) -> Path:
    if workdir is not None:
        return Path(workdir)
    if job.local is not None and job.local.workdir:
        return (base_dir / job.local.workdir).resolve()
    return base_dir


#: Variables a replica must get from this run only, never from the caller's
#: environment (a stale TF_CONFIG would make a one-replica job look distributed).
_CLUSTER_VARS = ("CLUSTER_SPEC", "TF_CONFIG", "CLOUD_ML_JOB_ID", "MASTER_ADDR", "MASTER_PORT",
                 "WORLD_SIZE", "RANK", VISIBLE)


def _is_cluster_var(name: str) -> bool:
    return name in _CLUSTER_VARS or name.startswith("AIP_")


def _child_env(job: Job, vertex_env: Mapping[str, str], torch: Mapping[str, str],
               packages: Sequence[str], visible: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not _is_cluster_var(k)}
    env.update(vertex_env)
    if job.local is not None:
        env.update(job.local.env)
    env.update(torch)
    # Last, like the rendezvous: the replica's share of this host's GPUs (--gpus picks them).
    env[VISIBLE] = visible
    inherited = [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []
    env["PYTHONPATH"] = os.pathsep.join(list(packages) + inherited + [_VXTRAIN_ROOT])
    env["PYTHONUNBUFFERED"] = "1"  # lines reach the prefixing reader as they are printed
    return env


def plan_replicas(job: Job, job_spec: Mapping[str, Any], *, trial: str | None = None,
                  extra_args: Sequence[str] = (), base_dir: Path, workdir: str | Path | None = None,
                  job_id: str = cluster_env.PREVIEW_JOB_ID, addresses: Addresses | None = None,
                  work_dir: Path | None = None, gpu_plan: GpuPlan | None = None) -> list[_Plan]:
    """One planned process per replica of pools 0, 1, 2 (parameter servers) and 3.

    ``addresses`` (from :func:`draw_addresses`) are the run's ports; without
    them, ports are drawn here, distinct but not reserved. ``work_dir`` is where
    package archives are installed (one folder per pool under it). ``gpu_plan``
    gives each replica its GPUs (without one, none: ``CUDA_VISIBLE_DEVICES=""``).
    """
    addresses = draw_addresses(job) if addresses is None else addresses
    hosts, master_port = addresses.hosts, addresses.master_port
    training = sum(p.replicas or 0 for p in job.ordered_pools() if p.role in slots.TRAINING_ROLES)
    cwd = _workdir(job, base_dir, workdir)
    plans = []
    for pool in job.ordered_pools():
        if pool.role == "reduction_server":
            continue
        command = replica_command(job, pool, extra_args)
        runs_package = not (job.local is not None and job.local.command) and not pool.command
        packages = package_paths(pool, base_dir, work_dir / slots.SLOTS[pool.index].cluster_key if work_dir else None,
                                 install=runs_package)
        source = image_source(job, pool, base_dir)
        pool_cwd = cwd
        if source is not None:
            packages = [str(source), *packages]
            if workdir is None and not (job.local is not None and job.local.workdir):
                pool_cwd = source  # the image's WorkingDir
        for i in range(pool.replicas or 0):
            vertex_env = cluster_env.replica_env(job, job_spec, pool.index, i, hosts=hosts,
                                                 trial=trial, job_id=job_id)
            torch = _torch_vars(pool, i, training, master_port)
            replica = ReplicaRun(slots.replica_name(pool.index, i), pool.role, pool.index, i, command)
            replica.gpus = list(gpu_plan.devices.get(replica.name, ())) if gpu_plan is not None else []
            plans.append(_Plan(replica, _child_env(job, vertex_env, torch, packages, ",".join(replica.gpus)),
                               pool_cwd))
    return plans


def _torch_vars(pool: Pool, i: int, world_size: int, port: int) -> dict[str, str]:
    """PyTorch's env:// rendezvous for the chief (rank 0) and workers (ranks 1..N)."""
    if pool.role not in slots.TRAINING_ROLES:
        return {}
    rank = 0 if pool.role == "chief" else i + 1
    return {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
            "WORLD_SIZE": str(world_size), "RANK": str(rank)}


# --- running them -------------------------------------------------------------

def _start(plan: _Plan, printer: _Printer) -> tuple[subprocess.Popen[bytes], _Reader]:
    # stdout and stderr stay apart, as on Vertex AI, where Cloud Logging gives a
    # replica's stderr lines severity ERROR and its stdout lines INFO (seen in
    # https://github.com/GoogleCloudPlatform/vertex-ai-samples/issues/242).
    try:
        proc = subprocess.Popen(plan.replica.command, cwd=plan.cwd, env=plan.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        raise LocalRunError(f"{plan.replica.name}: cannot start {plan.replica.command[0]!r} "
                            f"in {plan.cwd}: {exc.strerror or exc}") from exc
    reaper.guard(proc.pid)  # the replica leads its own group: pgid == pid
    plan.replica.pid = proc.pid
    assert proc.stdout is not None and proc.stderr is not None
    return proc, _Reader([(proc.stdout, printer.line), (proc.stderr, printer.error_line)],
                         f"[{plan.replica.name}] ", plan.replica.name)


#: Seconds a reader may wait for more output, once its replica is gone, before
#: the run stops waiting for it (a process that left the group holds the pipe).
_IDLE_READER = 2.0
#: Seconds a reader may take in all to copy what is left once its replica is gone
#: (a slow consumer of vxtrain's output; bounded for a chatty escaped process).
_DRAIN_LIMIT = 60.0


class _Reader:
    """Copies a replica's stdout and stderr, one whole line at a time, with its prefix, each
    stream to its own output (a daemon thread).

    One thread reads both pipes, so their lines keep the order they were written in as
    far as the pipes can tell: when both have data, all of stdout's goes first (a replica
    that prints and then fails shows its last lines before its traceback).
    """

    def __init__(self, streams: Sequence[tuple[IO[bytes], Callable[[str], None]]], prefix: str,
                 name: str) -> None:
        self._streams, self._prefix = list(streams), prefix
        self._partial = [b""] * len(self._streams)  # per stream: the start of a line not ended yet
        self._waiting_since: float | None = None  # set while blocked reading, not while writing
        self._thread = threading.Thread(target=self._pump, name=f"vxtrain-{name}", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        with selectors.DefaultSelector() as selector:
            for index, (stream, _) in enumerate(self._streams):
                os.set_blocking(stream.fileno(), False)
                selector.register(stream, selectors.EVENT_READ, index)
            while selector.get_map():
                self._waiting_since = time.monotonic()
                ready = sorted(key.data for key, _ in selector.select())  # stdout (0) before stderr (1)
                self._waiting_since = None
                for index in ready:
                    stream = self._streams[index][0]
                    if not self._drain(index):
                        selector.unregister(stream)
                        stream.close()

    def _drain(self, index: int) -> bool:
        """Write every whole line stream ``index`` has now (up to 1 MiB, so a flood on one
        stream cannot hold the other back for good); at its end, the rest too, and False."""
        stream, write = self._streams[index]
        for _ in range(16):
            try:
                chunk = os.read(stream.fileno(), 65536)
            except BlockingIOError:
                break
            if not chunk:
                if self._partial[index]:
                    self._emit(write, self._partial[index])
                return False
            *lines, self._partial[index] = (self._partial[index] + chunk).split(b"\n")
            for line in lines:
                self._emit(write, line)
        return True

    def _emit(self, write: Callable[[str], None], line: bytes) -> None:
        write(self._prefix + line.decode("utf-8", errors="replace").rstrip("\r"))

    def finish(self, idle: float = _IDLE_READER, limit: float = _DRAIN_LIMIT) -> None:
        """Wait until every line the replica wrote is out, even into a slow output; give up
        when no output came for ``idle`` seconds (the pipe is held by an escaped process)
        or after ``limit`` seconds in all."""
        deadline = time.monotonic() + limit
        while self._thread.is_alive() and time.monotonic() < deadline:
            self._thread.join(_POLL)
            since = self._waiting_since
            if since is not None and time.monotonic() - since > idle:
                return


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


#: Can a child's end be seen without reaping it? (POSIX ``waitid`` with WNOWAIT)
_CAN_PEEK = hasattr(os, "waitid") and hasattr(os, "WNOWAIT")


def _peek(proc: subprocess.Popen[bytes]) -> int | None:
    """The exit code of a replica that has ended (``-N`` for signal N), or None while it runs.

    The leader is left unreaped (a zombie): its pid, which is its group's id,
    cannot be handed to another process until ``proc.wait()``, so signalling
    the group stays safe until then. Without ``waitid`` the leader is reaped
    here, and :meth:`_Running.owned` then leaves its group alone.
    """
    if proc.returncode is not None:
        return proc.returncode
    if not _CAN_PEEK:
        return proc.poll()
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # reaped already (by proc.wait elsewhere)
        return proc.poll()
    if info is None or info.si_pid == 0:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


class _Running:
    """The started processes of one run, and the bookkeeping of how they end."""

    def __init__(self, printer: _Printer, grace: float) -> None:
        self.printer = printer
        self.grace = grace
        self.procs: list[tuple[ReplicaRun, subprocess.Popen[bytes]]] = []
        self.readers: list[_Reader] = []

    def start(self, plans: Sequence[_Plan]) -> None:
        for plan in plans:
            proc, reader = _start(plan, self.printer)
            self.procs.append((plan.replica, proc))
            self.readers.append(reader)

    def poll(self) -> list[ReplicaRun]:
        """Replicas that ended since the last poll (not reaped: see :func:`_peek`)."""
        ended = []
        for replica, proc in self.procs:
            if replica.exit_code is None:
                code = _peek(proc)
                if code is not None:
                    replica.exit_code = code
                    ended.append(replica)
        return ended

    def settle(self, seconds: float) -> None:
        """Give workers and evaluators a moment to end by themselves after the chief.

        Parameter servers never end on their own (they ``join()`` forever), so
        they are not waited for.
        """
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and any(
                _peek(p) is None for r, p in self.procs if r.role != "parameter_servers"):
            time.sleep(_POLL)

    def owned(self) -> list[subprocess.Popen[bytes]]:
        """Leaders not reaped yet: their group ids cannot have been reused, so their
        groups (the replica and whatever it started) may be signalled."""
        return [p for _, p in self.procs if p.returncode is None]

    def stop_all(self) -> None:
        """SIGTERM every group still ours, SIGKILL what is left after the grace period
        (grandchildren of a replica that already ended included), then reap."""
        live = [(r, p) for r, p in self.procs if _peek(p) is None]
        for replica, _ in live:
            replica.stopped = True
        for proc in self.owned():
            _signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        while any(_peek(p) is None for _, p in live) and time.monotonic() < deadline:
            time.sleep(_POLL)
        for proc in self.owned():
            _signal_group(proc.pid, signal.SIGKILL)
        for replica, proc in self.procs:
            proc.wait()
            reaper.release(proc.pid)
            if replica.exit_code is None:
                replica.exit_code = proc.returncode
        for reader in self.readers:
            reader.finish()


def _failure(replica: ReplicaRun) -> LocalRunResult:
    code = replica.exit_code
    how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
    return LocalRunResult(False, replica.name, code, f"replica {replica.name} ({replica.role}) {how}")


def _judge(ended: Sequence[ReplicaRun], printer: _Printer) -> LocalRunResult | None:
    """The run's outcome if one of the replicas that just ended decides it."""
    for replica in ended:
        if replica.exit_code and replica.role in _FATAL_ROLES:
            return _failure(replica)
        if replica.exit_code:
            printer.line(f"[vxtrain] {replica.name} ({replica.role}) exited with code "
                         f"{replica.exit_code}; the job goes on (evaluators do not decide it)")
    if any(r.role == "chief" for r in ended):
        return LocalRunResult(True, None, 0, f"the chief ({slots.replica_name(0, 0)}) finished")
    return None


def _watch(running: _Running, stop: threading.Event | None) -> LocalRunResult:
    while True:
        outcome = _judge(running.poll(), running.printer)
        if outcome is not None:
            return outcome
        if stop is not None and stop.wait(_POLL):
            return LocalRunResult(False, None, None, "cancelled", cancelled=True)
        if stop is None:
            time.sleep(_POLL)


def _announce(job: Job, plans: Sequence[_Plan], gpu_plan: GpuPlan, printer: _Printer) -> None:
    names = ", ".join(f"{p.replica.name} ({p.replica.role}{_gpu_words(p.replica)})" for p in plans)
    printer.line(f"[vxtrain] starting {len(plans)} replica(s): {names}")
    for note in gpu_plan.notes:
        printer.line(f"[vxtrain] note: {note}")
    for warning in gpu_plan.warnings:
        printer.line(f"[vxtrain] warning: {warning}")
    rs = job.pool("reduction_server")
    if rs is not None:
        printer.line(f"[vxtrain] Reduction Server ({slots.SLOTS[rs.index].cluster_key}, "
                     f"{rs.replicas or 'auto'} replica(s)) is not started locally: it is transparent "
                     "to training code")
    for line in tpu_notes(job):
        printer.line(f"[vxtrain] warning: {line}")


def _gpu_words(replica: ReplicaRun) -> str:
    """``, GPUs 0,1`` after a replica's role in the start line (nothing for a replica without)."""
    if not replica.gpus:
        return ""
    return f", GPU{'s' if len(replica.gpus) > 1 else ''} {','.join(replica.gpus)}"


def tpu_notes(job: Job) -> list[str]:
    """One line per pool on a TPU machine: it runs on the CPU here (TPUs are not emulated)."""
    out = []
    for pool in job.ordered_pools():
        if pool.role == "reduction_server" or not catalog.is_tpu(pool.machine_type):
            continue
        acc = pool.accelerator
        size = pool.tpu_topology or (f"{acc.count} x {acc.type}" if acc is not None and acc.type else None)
        asks = f"{pool.machine_type}, {size}" if size else f"{pool.machine_type}"
        out.append(f"{pool.role} asks for a TPU ({asks}): TPUs are not emulated locally; it runs on the CPU")
    return out


def run_job(job: Job, job_spec: Mapping[str, Any], *, trial: str | None = None,
            extra_args: Sequence[str] = (), stop: threading.Event | None = None,
            out: Output = sys.stdout, err: Output | None = None, workdir: str | Path | None = None,
            base_dir: str | Path | None = None, job_id: str | None = None,
            grace: float = DEFAULT_GRACE, settle: float = DEFAULT_SETTLE,
            gpus: GpuOptions = GpuOptions(), gpu_plan: GpuPlan | None = None) -> LocalRunResult:
    """Run every replica of ``job`` as a local process; returns how the run ended.

    ``job_spec`` is the compiled CustomJobSpec (camelCase) that CLUSTER_SPEC
    carries. Replicas' lines go to ``out``, those they print on stderr to ``err``
    when given. ``base_dir`` is the spec file's folder (``local.workdir`` is
    relative to it); ``workdir`` overrides the working directory. Setting
    ``stop`` cancels the run. Once the chief succeeded, workers and evaluators
    get ``settle`` seconds to end by themselves; then whatever still runs gets
    SIGTERM and, ``grace`` seconds later, SIGKILL. Raises LocalRunError when a replica cannot be
    started (nothing is left running then either).

    GPUs: ``gpu_plan`` when given (a study's trial slot), else this host's handed out
    as ``gpus`` says (:func:`.gpus.resolve`); GpuShortageError, before anything
    starts, when the host has too few.
    """
    check_host_can_start(local_processes(job), "the job")  # before the GPUs' plan, per replica
    cluster_env.check_cluster_size(job)
    gpu_plan = resolve(job, gpus) if gpu_plan is None else gpu_plan
    printer = _Printer(out, err)
    base = Path(base_dir).resolve() if base_dir is not None else Path.cwd()
    addresses = draw_addresses(job, reserve=True)
    packages = Path(tempfile.mkdtemp(prefix="vxtrain-job-"))  # this run's installed package_uris
    try:
        plans = plan_replicas(job, job_spec, trial=trial, extra_args=extra_args, base_dir=base,
                              workdir=workdir, job_id=job_id or str(time.time_ns() // 1000),
                              addresses=addresses, work_dir=packages, gpu_plan=gpu_plan)
        result = _run_plans(job, plans, gpu_plan, printer, stop, grace, settle)
    finally:
        release_ports(addresses.ports)  # every replica is gone by now
        shutil.rmtree(packages, ignore_errors=True)
    _report(result, printer)
    return result


def _run_plans(job: Job, plans: Sequence[_Plan], gpu_plan: GpuPlan, printer: _Printer,
               stop: threading.Event | None, grace: float, settle: float) -> LocalRunResult:
    """Start the planned processes, watch them to the end, and leave none running."""
    _announce(job, plans, gpu_plan, printer)
    running = _Running(printer, grace)
    try:
        running.start(plans)
        result = _watch(running, stop)
        if result.succeeded:
            running.settle(settle)
    finally:
        running.stop_all()
    result.replicas = [p.replica for p in plans]
    return result


def _report(result: LocalRunResult, printer: _Printer) -> None:
    stopped = [r.name for r in result.replicas if r.stopped]
    if stopped:
        printer.line(f"[vxtrain] stopped {', '.join(stopped)}")
    printer.line(f"[vxtrain] {'succeeded' if result.succeeded else 'FAILED'}: {result.message}"
                 if not result.cancelled else "[vxtrain] cancelled: every replica was stopped")
