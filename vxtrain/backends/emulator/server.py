"""The emulator's server: every emulated service on one exclusively bound port.

``start_emulator`` builds the shared :class:`~vxtrain.backends.emulator.store.Emulator`,
registers the gRPC handler of each service in :data:`SERVICES` over it (each
handler answers its own service name; anything else is UNIMPLEMENTED), binds
``host:port`` and returns an :class:`EmulatorHandle` that stops it all.
"""
from __future__ import annotations

import ipaddress
import os
import socket
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent import futures
from pathlib import Path
from typing import Any, TextIO

import grpc

from vxtrain.backends.emulator import auth, jobservice, logging_service, persistent_resources, quotas, rest
from vxtrain.backends.emulator.common import Service
from vxtrain.backends.emulator.faults import Fault, faults_from_env
from vxtrain.backends.emulator.persistent_resources import ResourceStore
from vxtrain.backends.emulator.quotas import QuotaLimit, QuotaStore
from vxtrain.backends.emulator.stockouts import DEFAULT_STOCKOUT_AFTER, Preemption, Preemptions, Stockouts
from vxtrain.backends.emulator.store import Emulator
from vxtrain.errors import UsageError, VxtrainError
from vxtrain.runtime.gpus import GpuOptions

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8470

#: Builds one service's gRPC handler over the shared emulator.
ServiceBuilder = Callable[[Emulator], grpc.GenericRpcHandler]
#: The services served on the emulator's port; a new one (another Google API
#: beside JobService) adds its builder here.
SERVICES: tuple[ServiceBuilder, ...] = (
    jobservice.generic_handler,
    # google.logging.v2.LoggingServiceV2: the lines the jobs print, as Vertex AI logs them.
    lambda emulator: logging_service.generic_handler(emulator.logs, emulator.faults.take_tail),
    # google.cloud.aiplatform.v1.PersistentResourceService: resources jobs are checked against.
    lambda emulator: persistent_resources.generic_handler(emulator.resources, emulator.cancel_jobs_on),
    # google.api.cloudquotas.v1.CloudQuotas: the quota limits the preflight reads (and create enforces).
    lambda emulator: quotas.generic_handler(emulator.quotas, emulator.faults),
)
#: The same services' unary RPCs, served over HTTP/JSON on ``--http-port`` too
#: (vxtrain.backends.emulator.rest): one implementation per RPC, whichever port is asked.
REST_SERVICES: tuple[Callable[[Emulator], Service], ...] = (
    jobservice.service,
    lambda emulator: logging_service.service(emulator.logs),
    lambda emulator: persistent_resources.service(emulator.resources, emulator.cancel_jobs_on),
    lambda emulator: quotas.service(emulator.quotas, emulator.faults),
)


class CallCounter(grpc.ServerInterceptor):  # type: ignore[misc]  # grpc's classes are unannotated
    """Counts the RPCs the server received, by method name (``GetCustomJob``,
    ``ListLogEntries``, ``TailLogEntries``: one per stream, however long it stays open), so
    tests and scripts/log_calls.py can say how many calls following a job costs. The REST port's
    calls count under the same names (:meth:`add`): one RPC, whichever port it came by."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        """Count the call, then serve it as usual."""
        self.add(str(details.method).rsplit("/", 1)[-1])
        return continuation(details)

    def add(self, method: str) -> None:
        """Count one call of ``method`` (an RPC name: the REST port's routes call this)."""
        with self._lock:
            self._counts[method] += 1

    def __getitem__(self, method: str) -> int:
        with self._lock:
            return self._counts[method]

    def snapshot(self) -> dict[str, int]:
        """Every method's count so far."""
        with self._lock:
            return dict(self._counts)


class EmulatorHandle:
    """A running emulator: its address, its jobs, and how to stop it. ``calls``: the RPCs
    it received, by method name (``handle.calls["TailLogEntries"]``)."""

    def __init__(self, server: grpc.Server, emulator: Emulator, host: str, port: int,
                 executor: futures.ThreadPoolExecutor | None = None, calls: CallCounter | None = None,
                 *, rest_server: rest.RestServer | None = None, token: auth.Token | None = None,
                 socket_path: Path | None = None) -> None:
        self.calls = calls or CallCounter()
        #: The Unix socket it also serves on, in the user's private folder: vxtrain's clients
        #: send the token there only (vxtrain.backends.tokens); gRPC removes it on stop.
        self.socket = socket_path
        #: The bearer token every call must carry (vxtrain.backends.emulator.auth); its file is removed on stop.
        self.token = token
        self.rest = rest_server
        self.server = server
        self.emulator = emulator
        self.host = host
        self.port = port
        self._executor = executor

    @property
    def address(self) -> str:
        """``HOST:PORT`` as the client's ``api_endpoint`` takes it."""
        return f"{_host_part(self.host)}:{self.port}"

    @property
    def http_url(self) -> str | None:
        """``http://HOST:PORT/`` of the REST port (gcloud's ``api_endpoint_overrides``), or None."""
        return None if self.rest is None else f"http://{_host_part(self.host)}:{self.rest.port}/"

    def gcloud_environment(self) -> dict[str, str]:
        """gcloud's settings for the REST port as ``CLOUDSDK_…`` environment variables ({} without one)."""
        token_file = None if self.token is None or self.token.file is None else str(self.token.file)
        if self.http_url is None:  # the token file's line alone: where the token is, as gcloud names it
            return {} if token_file is None else {auth.GCLOUD_TOKEN_FILE_ENV: token_file}
        return rest.gcloud_environment(self.http_url, token_file)

    def jobs(self, kind: str = "custom") -> list[Any]:
        """Copies of the stored jobs (``"custom"`` or ``"hpt"``)."""
        return self.emulator.jobs(kind)

    @property
    def resources(self) -> ResourceStore:
        """The persistent resources it serves (``set_state`` puts one in another state)."""
        return self.emulator.resources

    def add_fault(self, fault: Fault | str) -> None:
        """Inject a fault at runtime."""
        self.emulator.add_fault(fault)

    @property
    def quotas(self) -> QuotaStore:
        """The quota limits it serves and enforces (``set("METRIC:REGION=N")`` adds one)."""
        return self.emulator.quotas

    @property
    def stockouts(self) -> Stockouts:
        """The regions without capacity (``set(region, Shortage.stockout)`` changes one)."""
        return self.emulator.stockouts

    @property
    def preemptions(self) -> Preemptions:
        """The regions whose running jobs lose their machines (``add("us-east1:2:1")`` adds one)."""
        return self.emulator.preemptions

    def stop(self, grace: float | None = 0.5) -> None:
        """Stop serving, cancel the jobs still running, and wait until no thread
        or process of the emulator is left (idempotent)."""
        if self.rest is not None:
            self.rest.stop()
        self.server.stop(grace).wait()
        if self.token is not None:
            self.token.remove()
        if self._executor is not None:
            # grpc never shuts down the executor it was given: its handler
            # threads would outlive the server. Waiting also lets a create still
            # in a handler finish before close() collects the job threads.
            self._executor.shutdown(wait=True)
        self.emulator.close()

    def wait_for_termination(self, timeout: float | None = None) -> bool:
        """Block while the server serves (True when it stopped)."""
        stopped: bool = self.server.wait_for_termination(timeout)
        return stopped

    def __enter__(self) -> EmulatorHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _host_part(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def start_emulator(host: str = DEFAULT_HOST, port: int = 0, *, faults: Iterable[Fault | str] = (),
                   simulate_seconds: float | None = None, workdir: str | Path | None = None,
                   environ: Mapping[str, str] | None = None, out: TextIO | None = None,
                   max_workers: int = 32, seed: int | None = None,
                   allow_remote: bool = False, quotas: Iterable[QuotaLimit | str] = (),
                   gpus: GpuOptions | None = None, stockout: Iterable[str] = (), pending: Iterable[str] = (),
                   stockout_after: float = DEFAULT_STOCKOUT_AFTER,
                   preempt: Iterable[Preemption | str] = (), http_port: int | None = None,
                   token: auth.Token | None = None) -> EmulatorHandle:
    """Serve the emulated services (:data:`SERVICES`) on ``host:port`` (0: any free port).

    The emulator runs the command of every job it is sent, as this user: a
    ``host`` that is not loopback (``0.0.0.0``, a LAN address, a name that
    resolves to one) raises UsageError unless ``allow_remote``.

    Faults come from ``faults`` plus ``VXTRAIN_EMULATOR_FAULTS`` in ``environ``
    (default ``os.environ``). ``quotas``: the limits its Cloud Quotas API serves and its
    creates enforce (``METRIC:REGION=N``, as ``--quota``). The port is bound exclusively: a taken port
    raises VxtrainError instead of silently sharing it (gRPC enables
    SO_REUSEPORT by default on Linux). ``gpus``: how its jobs' replicas share this
    host's GPUs (``--gpus``, ``--share-gpus``, ``--no-gpus``; vxtrain.runtime.gpus).

    Jobs created in a ``stockout`` region end FAILED for capacity after
    ``stockout_after`` seconds PENDING; in a ``pending`` region they stay PENDING
    until cancelled (vxtrain.backends.emulator.stockouts). ``preempt``: rules
    (``REGION:AFTER[:COUNT]``, as ``--preempt``) by which a job that has been RUNNING
    AFTER seconds loses its machines and ends FAILED for capacity.

    ``http_port``: serve the same services over HTTP/JSON on this port of ``host`` too
    (0: any free port; None: no REST port), as Google's REST endpoints do.

    Every call, gRPC and REST, must carry ``authorization: Bearer TOKEN``
    (vxtrain.backends.emulator.auth): ``token`` (``--target local``'s private one), else
    ``VXTRAIN_EMULATOR_TOKEN`` (in ``os.environ``), else a random one written to the port's
    token file (mode 0600), removed on stop. The gRPC services are served on the port's Unix
    socket beside that file too (:attr:`EmulatorHandle.socket`), through which alone
    vxtrain's clients send the token.
    """
    if not allow_remote:
        refuse_remote(host)
    env = os.environ if environ is None else environ
    emulator = Emulator(faults=[*faults, *faults_from_env(env)], simulate_seconds=simulate_seconds,
                        workdir=workdir, out=out, seed=seed, quotas=quotas, gpus=gpus,
                        stockouts=Stockouts(stockout, pending, stockout_after),
                        preemptions=Preemptions(preempt))
    # A TailLogEntries stream holds a worker while it is open: half the pool at most, so the
    # other calls (a followed job's state polls among them) always find one; a follower
    # refused a stream polls instead. 32 workers: 16 streams, past a project's 10.
    emulator.logs.max_sessions = max_workers // 2
    executor = futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="vxtrain-emulator")
    calls = CallCounter()
    # The process's own environment, not ``environ`` (faults only): clients here find the token there.
    token = token or auth.serving_token(os.environ)
    server = grpc.server(executor, options=[("grpc.so_reuseport", 0)],
                         interceptors=[auth.BearerInterceptor(token), calls])
    server.add_generic_rpc_handlers(tuple(build(emulator) for build in SERVICES))
    socket_path: Path | None = None
    try:
        bound = _bind(server, host, port)
        if token.needs_file:
            token.write(bound)  # once the port is ours: a file left on it by a killed emulator is stale
        socket_path = _bind_socket(server, bound)
        rest_server = None if http_port is None else _serve_rest(emulator, host, http_port, token, calls.add)
    except VxtrainError:
        token.remove()
        server.stop(None)
        if socket_path is not None:
            socket_path.unlink(missing_ok=True)  # bound by this start, never served: no one else's
        executor.shutdown(wait=True)
        raise
    server.start()
    return EmulatorHandle(server, emulator, host, bound, executor, calls, rest_server=rest_server, token=token,
                          socket_path=socket_path)


def _bind_socket(server: grpc.Server, port: int) -> Path:
    """Serve on the port's Unix socket in the user's private folder too (auth.claim_socket)."""
    path = auth.claim_socket(port)
    try:
        bound = server.add_insecure_port(f"unix:{path}")
    except RuntimeError:  # grpc returns 0, or raises, when a bind fails
        bound = 0
    if not bound:
        raise VxtrainError(f"cannot serve the emulator's socket at {path}; point XDG_RUNTIME_DIR or XDG_CACHE_HOME "
                           f"at a private folder of yours")
    return path


def _serve_rest(emulator: Emulator, host: str, port: int, gate: rest.Gate, count: rest.Count) -> rest.RestServer:
    """The REST port over the services of :data:`REST_SERVICES`, on every address of ``host``;
    ``gate`` judges each call's Authorization header and words the refusal (the gRPC port's
    token), ``count`` is the gRPC port's call counter."""
    return rest.serve([build(emulator) for build in REST_SERVICES], _addresses(host), port, gate, count)


def is_loopback_host(host: str) -> bool:
    """True when every address ``host`` names (or resolves to) is a loopback address."""
    try:
        addresses = _addresses(host)
    except VxtrainError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(a.split("%", 1)[0]).is_loopback for a in addresses)


def refuse_remote(host: str) -> None:
    """Raise UsageError unless ``host`` is loopback: whoever reaches the port runs code here."""
    if not is_loopback_host(host):
        raise UsageError(
            f"refusing to serve on {host}: the emulator runs the command of every job it is sent, "
            "so anyone who can reach the port could run code as this user; serve on 127.0.0.1 "
            "(the default), or pass --allow-remote if that is really what you want")


def _bind(server: grpc.Server, host: str, port: int) -> int:
    """Bind every address of ``host`` on one port, or raise VxtrainError.

    A name is resolved here, each address bound on its own: given a name,
    grpc binds what it can and only warns, so ``localhost`` with 127.0.0.1's
    port taken would listen on ::1 alone while clients reach the other process.
    """
    bound = port
    for address in _addresses(host):
        try:
            got = server.add_insecure_port(f"{_host_part(address)}:{bound}")
        except RuntimeError:  # grpc returns 0, or raises, when a bind fails
            got = 0
        if not got:
            where = host if address == host else f"{host} ({address})"
            raise VxtrainError(f"port {bound} on {where} is in use (or {host} is not an address of "
                               "this machine); pick another with --port, or --port 0 for any free port")
        bound = got
    return bound


def _addresses(host: str) -> list[str]:
    """The IP addresses of ``host`` (an address is its own), IPv4 first."""
    try:
        return [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise VxtrainError(f"cannot bind {host}: the name does not resolve ({exc}); give an address "
                           "such as 127.0.0.1") from exc
    found = {str(info[4][0]) for info in infos}
    return sorted(found, key=lambda a: (":" in a, a))
