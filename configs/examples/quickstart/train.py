"""Quickstart training "job": the chief gathers a greeting from every worker.

Each replica learns its role and the other replicas' addresses from the
environment Vertex AI sets (read with ``vxtrain.cluster``, stdlib only):
the chief listens on its own address, each worker connects to it and says
hello, and the chief exits once every worker has answered. It shows that
the cluster environment is complete and consistent, with no framework.
"""
from __future__ import annotations

import socket
import sys
import time

from vxtrain import cluster

TIMEOUT = 30.0


def serve_chief(info: cluster.ClusterInfo) -> int:
    """Accept one greeting per worker on the chief's own port, then report."""
    port = int(info.cluster["chief"][0].rpartition(":")[2])
    with socket.create_server(("", port)) as server:
        server.settimeout(TIMEOUT)
        greetings = []
        for _ in range(info.num_workers):
            conn, _ = server.accept()
            with conn:
                greetings.append(conn.recv(256).decode())
                conn.sendall(b"welcome")
    for text in sorted(greetings):
        print(f"chief heard: {text}")
    print(f"chief: all {info.num_workers} workers reported; done")
    return 0


def greet_chief(info: cluster.ClusterInfo) -> int:
    """Connect to the chief (retrying while it starts) and say who we are."""
    host, _, port = info.cluster["chief"][0].rpartition(":")
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=5) as conn:
                conn.sendall(f"hello from worker {info.index}".encode())
                print(f"worker {info.index}: chief says {conn.recv(256).decode()}")
                return 0
        except OSError:
            if time.monotonic() > deadline:
                print(f"worker {info.index}: no chief at {host}:{port}", file=sys.stderr)
                return 1
            time.sleep(0.05)


def main() -> int:
    """Branch on the role, as a single distributed-training binary does."""
    info = cluster.current()
    print(f"role={info.role} index={info.index} trial={info.trial} workers={info.num_workers}")
    if info.is_chief:
        return serve_chief(info) if info.num_workers else 0
    return greet_chief(info) if info.role == "worker" else 0


if __name__ == "__main__":
    sys.exit(main())
