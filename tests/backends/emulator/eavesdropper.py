"""A listener another user runs to catch an emulator's token (tests/backends/emulator/test_second_user.py).

``python eavesdropper.py RECORD ADDRESS...``: a gRPC server on each ADDRESS (``127.0.0.1:0``,
``[::1]:PORT``, ``unix:/path``; port 0 on the first: any free one, which the others then
take) that answers every unary call with an empty message (an empty ListCustomJobsResponse:
the caller goes on as if an emulator had answered) and appends each call it receives, its
method and every metadata key and value, as one JSON line to RECORD. It prints ``ready PORT``
once it listens, and serves until killed. It imports grpc alone, not vxtrain.
"""
from __future__ import annotations

import json
import sys
import threading
from concurrent import futures
from typing import Any

import grpc


class Recorder(grpc.GenericRpcHandler):  # type: ignore[misc]  # grpc's classes are unannotated
    """Records each call, then answers it with an empty message."""

    def __init__(self, record: str) -> None:
        self.record = record
        self.lock = threading.Lock()

    def service(self, details: Any) -> Any:
        """Record the call's method and metadata; answer it empty."""
        seen = {"method": details.method, "metadata": [[str(k), str(v)] for k, v in details.invocation_metadata]}
        with self.lock, open(self.record, "a", encoding="utf-8") as out:
            out.write(json.dumps(seen) + "\n")
        return grpc.unary_unary_rpc_method_handler(lambda request, context: b"")


def main(record: str, addresses: list[str]) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((Recorder(record),))
    port = 0
    for address in addresses:
        if not address.startswith("unix:"):
            host, _, wanted = address.rpartition(":")
            address = f"{host}:{port or int(wanted)}"
        bound = server.add_insecure_port(address)
        if not bound:
            sys.exit(f"cannot listen on {address}")
        port = port or bound
    server.start()
    print(f"ready {port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
