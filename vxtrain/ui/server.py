"""The ui's HTTP server: the standard library's ThreadingHTTPServer on 127.0.0.1, one thread
per connection (as the emulator's REST port: vxtrain.backends.emulator.rest).

Every request passes vxtrain.ui.guard first (Host, method, cross-site, token). Then:

- ``/``: the jobs table; ``/fragments/jobs``: its section again (the page's script puts it
  in place every few seconds);
- ``/job?name=NAME``: one job; ``/fragments/job?name=NAME``: its summary again;
  ``/job/logs?name=NAME``: its log lines as server-sent events
  (https://html.spec.whatwg.org/multipage/server-sent-events.html), fed by the follower
  ``vxtrain logs --follow`` uses (vxtrain.submission.JobWatch: a TailLogEntries stream,
  polling as the fallback, the job's state polled between): ``log`` events (one line each,
  ``id`` its insertId), a ``state`` event per poll, ``note`` for what the follower warns of
  (the stream refused: polling from now on), ``end`` once the job has ended and its last
  lines are in, ``problem`` when the job cannot be followed;
- ``/plan``: the spec files under the folder the ui was started in; ``/plan?file=PATH``:
  that spec's plan report, exactly ``vxtrain plan PATH --html``'s (vxtrain.render.report);
- ``/static/ui.css``, ``/static/ui.js``: the ui's only assets (package data).

Every answer says not to cache it, not to be framed, not to send a referrer, and
(Content-Security-Policy) to load nothing from anywhere but this origin.
"""
from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from vxtrain import errors
from vxtrain.api import Options, check_file
from vxtrain.joblogs import Entry
from vxtrain.render.report import plan_report
from vxtrain.submission import Hooks, JobView
from vxtrain.submission.names import split_name
from vxtrain.ui import pages
from vxtrain.ui.guard import METHODS, Guard, Verdict, new_token
from vxtrain.ui.source import PathRefused, Source, spec_files, spec_path

#: The only address served: the ui shows a project's jobs to whoever can read the page.
HOST = "127.0.0.1"
#: The assets: name → content type.
STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}
#: Sent with every answer. The plan report styles itself inline, hence style-src's
#: 'unsafe-inline' (no script runs inline: script-src is this origin's files only).
SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                "img-src 'self' data:; connect-src 'self'; form-action 'self'; "
                                "frame-ancestors 'none'; base-uri 'none'"),
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}
#: How long ``stop`` waits for a following stream to notice (one poll of the job, at most).
STOP_WAIT_S = 35.0


class _Stopped(Exception):
    """The ui is stopping: a log stream ends."""


class _Handler(BaseHTTPRequestHandler):
    server: UiHttpServer
    protocol_version = "HTTP/1.1"
    server_version = "vxtrain-ui"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        self.server.opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.closed(self.connection)

    def _serve(self) -> None:
        verdict = self.server.guard.check(self.command, self.path, dict(self.headers.items()))
        if self.command not in METHODS:
            self.close_connection = True  # its body, if any, is not read
        if not verdict.allowed:
            self._refuse(verdict)
            return
        parts = urlsplit(self.path)
        route = ROUTES.get(parts.path)
        if route is None and parts.path.startswith("/static/"):
            self._static(parts.path.removeprefix("/static/"))
            return
        if route is None:
            self._page(HTTPStatus.NOT_FOUND, pages.problem_page(404, "Not found", f"no page {parts.path}"))
            return
        query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
        try:
            route(self, query)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the browser left
        except errors.VxtrainError as exc:
            self._error(exc)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _serve  # noqa: N815

    # --- answers ------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, content_type: str, headers: Mapping[str, str] = {}) -> None:
        self.send_response(status)
        for name, value in {"Content-Type": content_type, **SECURITY_HEADERS, **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _page(self, status: int, html: str) -> None:
        self._send(status, html.encode(), "text/html; charset=utf-8")

    def _refuse(self, verdict: Verdict) -> None:
        if verdict.location is not None:
            self._send(verdict.status, b"", "text/plain; charset=utf-8",
                       {"Location": verdict.location, **({"Set-Cookie": verdict.cookie} if verdict.cookie else {})})
            return
        status = HTTPStatus(verdict.status)
        extra = {"Allow": ", ".join(sorted(METHODS))} if status is HTTPStatus.METHOD_NOT_ALLOWED else {}
        self._send(status, pages.problem_page(status.value, status.phrase, verdict.reason).encode(),
                   "text/html; charset=utf-8", extra)

    def _error(self, exc: errors.VxtrainError) -> None:
        status = (exc.status if isinstance(exc, PathRefused) else HTTPStatus.NOT_FOUND
                  if isinstance(exc, errors.NotFoundError) else HTTPStatus.BAD_REQUEST
                  if isinstance(exc, errors.UsageError) else HTTPStatus.BAD_GATEWAY)
        phrase = HTTPStatus(status).phrase
        self._page(status, pages.problem_page(int(status), phrase, str(exc)))

    def _static(self, name: str) -> None:
        kind = STATIC.get(name)
        if kind is None:
            self._page(HTTPStatus.NOT_FOUND, pages.problem_page(404, "Not found", f"no asset {name}"))
            return
        self._send(HTTPStatus.OK, self.server.asset(name), kind)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        pass  # the page is the output; a request log would only repeat it

    # --- pages --------------------------------------------------------------------------

    def jobs(self, query: Mapping[str, str]) -> None:
        source = self.server.source
        self._page(HTTPStatus.OK, pages.jobs_page(source.ledger(), source.refresh_s))

    def jobs_fragment(self, query: Mapping[str, str]) -> None:
        self._page(HTTPStatus.OK, pages.jobs_section(self.server.source.ledger()))

    def job(self, query: Mapping[str, str]) -> None:
        source = self.server.source
        self._page(HTTPStatus.OK, pages.job_page(source.job_page(_name(query)), source.refresh_s))

    def job_fragment(self, query: Mapping[str, str]) -> None:
        self._page(HTTPStatus.OK, pages.job_summary(self.server.source.job_page(_name(query))))

    def plan(self, query: Mapping[str, str]) -> None:
        root = self.server.root
        if not query.get("file"):
            self._page(HTTPStatus.OK, pages.plan_index(str(root), spec_files(root)))
            return
        path = spec_path(root, query["file"])
        # As `vxtrain plan FILE --html` checks it: priced (cost=True), nothing sent anywhere.
        self._page(HTTPStatus.OK, plan_report(check_file(path, Options(cost=True))))

    def job_logs(self, query: Mapping[str, str]) -> None:
        """The job's lines as server-sent events until it has ended (or the browser leaves)."""
        name = _name(query)
        session = self.server.source.session
        session.fetch(name)  # a wrong name is answered 404 before the stream starts
        self.send_response(HTTPStatus.OK)
        for header, value in {"Content-Type": "text/event-stream; charset=utf-8", **SECURITY_HEADERS}.items():
            self.send_header(header, value)
        self.send_header("X-Accel-Buffering", "no")
        self.end_headers()
        self.close_connection = True  # the stream is the connection's last answer
        if self.command == "HEAD":
            return
        stopping = self.server.stopping

        def lines(entries: list[Entry]) -> None:
            if stopping.is_set():
                raise _Stopped
            self._events(_log_event(entry) for entry in entries)

        def polled(view: JobView, elapsed: float) -> None:
            if stopping.is_set():
                raise _Stopped
            self._events([("state", None, {"state": view.state.value, "terminal": view.state.terminal})])

        # What the follower would warn of on a terminal (the stream refused, polling from now on,
        # a retried call) goes to the page as ``note`` events, through a logger of this stream's own.
        notes = logging.Logger("vxtrain.ui.logs", logging.WARNING)
        notes.addHandler(_Notes(lambda message: self._events([("note", None, {"message": message})])))
        following = replace(session.with_hooks(Hooks(progress=polled, logs=lines)), log=notes)
        try:
            with following:
                view = following.wait(name, check=False)
            self._events([("end", None, {"state": view.state.value})])
        except _Stopped:
            return
        except errors.VxtrainError as exc:
            self._events([("problem", None, {"message": str(exc)})])

    def _events(self, events: Iterable[tuple[str, str | None, Mapping[str, object]]]) -> None:
        """Write server-sent events: each ``(event, id, data)``; flushed at once."""
        chunk = []
        for event, event_id, data in events:
            head = f"event: {event}\n" + (f"id: {_one_line(event_id)}\n" if event_id else "")
            chunk.append(f"{head}data: {json.dumps(data)}\n\n")
        if chunk:
            self.wfile.write("".join(chunk).encode())
            self.wfile.flush()


def _log_event(entry: Entry) -> tuple[str, str, Mapping[str, object]]:
    """A log line as a server-sent event: its id the entry's own (else its time, replica and
    text), so a reconnecting page is not sent it twice."""
    event_id = entry.insert_id or f"{entry.timestamp}|{entry.replica}|{entry.text}"
    return "log", event_id, {"id": event_id, **entry.to_json()}


class _Notes(logging.Handler):
    """A log record's message to ``send`` (a write that fails is left to the stream's next one)."""

    def __init__(self, send: Callable[[str], None]) -> None:
        super().__init__(logging.WARNING)
        self.send = send

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.send(record.getMessage())
        except OSError:
            pass  # the browser left: the next line or poll ends the stream


def _name(query: Mapping[str, str]) -> str:
    name = query.get("name", "")
    split_name(name)  # UsageError (400) for anything but a job's full resource name
    return name


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


Route = Callable[[_Handler, Mapping[str, str]], None]
ROUTES: dict[str, Route] = {
    "/": _Handler.jobs,
    "/fragments/jobs": _Handler.jobs_fragment,
    "/job": _Handler.job,
    "/fragments/job": _Handler.job_fragment,
    "/job/logs": _Handler.job_logs,
    "/plan": _Handler.plan,
}


class UiHttpServer(ThreadingHTTPServer):
    """The server: its guard, its source of jobs, the folder specs are read under."""

    # Threads of following streams end within one poll of their job once ``stopping`` is set
    # (``Ui.stop`` joins them); daemon, so that an interpreter exiting never waits on one.
    daemon_threads = True

    def __init__(self, port: int, guard_token: str, source: Source, root: Path) -> None:
        super().__init__((HOST, port), _Handler)
        self.guard = Guard(int(self.server_address[1]), guard_token)
        self.source = source
        self.root = root
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._connection_threads: set[threading.Thread] = set()
        self._assets: dict[str, bytes] = {}

    def process_request(self, request: Any, client_address: Any) -> None:
        """Each connection on a thread of its own (ThreadingMixIn's), kept for ``stop`` to join."""
        thread = threading.Thread(target=self._connection, args=(request, client_address),
                                  name="vxtrain-ui-connection", daemon=True)
        with self._lock:
            self._connection_threads.add(thread)
        thread.start()

    def _connection(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._connection_threads.discard(threading.current_thread())

    def join_connections(self, timeout: float) -> None:
        """Wait (``timeout`` seconds at most, each) for the connections' threads to end."""
        with self._lock:
            threads = list(self._connection_threads)
        for thread in threads:
            thread.join(timeout)

    def asset(self, name: str) -> bytes:
        """A file of vxtrain/ui/static, read once."""
        if name not in self._assets:
            self._assets[name] = resources.files("vxtrain.ui").joinpath("static", name).read_bytes()
        return self._assets[name]

    def opened(self, connection: socket.socket) -> None:
        with self._lock:
            self._open.add(connection)

    def closed(self, connection: socket.socket) -> None:
        with self._lock:
            self._open.discard(connection)

    def hang_up(self) -> None:
        """End every open connection (an idle keep-alive one, a log stream)."""
        with self._lock:
            for connection in self._open:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # closed meanwhile


@dataclass
class Ui:
    """A running ui: its ``url`` (with the token: print it once), its ``port``; ``stop()``."""

    server: UiHttpServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        """The port served on."""
        return self.server.guard.port

    @property
    def url(self) -> str:
        """The URL that lets a browser in (the token, once)."""
        return self.server.guard.url()

    def stop(self) -> None:
        """Stop serving: no new connection, the open ones ended, the log streams told to stop."""
        self.server.stopping.set()
        self.server.shutdown()
        self.server.hang_up()
        self.server.server_close()
        self.thread.join()
        self.server.join_connections(STOP_WAIT_S)

    def __enter__(self) -> Ui:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(source: Source, *, port: int = 0, root: Path | None = None, token: str | None = None) -> Ui:
    """Serve the ui on 127.0.0.1:``port`` (0: any free port) in a thread of its own; the plan
    page reads specs under ``root`` (default: the current folder). VxtrainError when the port
    is taken."""
    try:
        server = UiHttpServer(port, token or new_token(), source, (root or Path.cwd()).resolve())
    except OSError as exc:
        raise errors.VxtrainError(f"cannot serve the ui on port {port} of {HOST}: {exc.strerror or exc}; pick "
                                  "another with --port, or --port 0 for any free port") from None
    thread = threading.Thread(target=server.serve_forever, name="vxtrain-ui", daemon=True)
    thread.start()
    return Ui(server, thread)
