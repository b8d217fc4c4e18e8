"""A webhook for tests: a real HTTP server on 127.0.0.1 (http.server, on a thread) that
records every POST it is sent and answers each with the next status of a script."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Hook:
    """What the hook received (``posts``: path, headers, parsed body; ``raws``: each body's exact
    bytes, as a signature is computed over them) and will answer."""

    url: str
    statuses: list[int] = field(default_factory=list)  # answered in order; 200 once they run out
    posts: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)
    raws: list[bytes] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def bodies(self) -> list[Any]:
        """The JSON bodies received, in order."""
        with self.lock:
            return [body for _, _, body in self.posts]


@contextmanager
def webhook(statuses: Sequence[int] = (), path: str = "/services/T000/B000/secret",
            delay: float = 0.0) -> Iterator[Hook]:
    """Serve a hook on a free port of 127.0.0.1 for the block; yield it. ``delay``: seconds it
    takes before answering each POST (a slow hook), the POST recorded first."""
    hook = Hook(url="", statuses=list(statuses))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with hook.lock:
                hook.posts.append((self.path, dict(self.headers.items()), json.loads(raw)))
                hook.raws.append(raw)
                status = hook.statuses.pop(0) if hook.statuses else 200
            time.sleep(delay)
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:  # quiet: pytest shows what a test prints
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="test-webhook", daemon=True)
    thread.start()
    hook.url = f"http://127.0.0.1:{server.server_address[1]}{path}"
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
