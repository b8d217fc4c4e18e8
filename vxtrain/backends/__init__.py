"""Job APIs behind one seam (``base.JobBackend``), job logs behind another
(``base.LogReader``), and the one place that builds them.

- ``vertex``: Vertex AI's regional endpoint, or an emulator at ``HOST:PORT``,
  through google-cloud-aiplatform's JobServiceClient;
- ``emulator``: the in-process fake of the JobService (and of Cloud Logging's
  LoggingServiceV2), which runs jobs here with the local runner;
- ``cloud_logging``: a job's log lines from Cloud Logging, or from an emulator
  at ``HOST:PORT``, through google-cloud-logging's LoggingServiceV2Client.

Callers (vxtrain.api, vxtrain.submission) get a backend from ``open_backend``
and a log reader from ``open_log_reader``, and import no backend module themselves.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from vxtrain.backends.base import JobBackend, LogReader
from vxtrain.runtime.gpus import GpuOptions

#: ``open_backend`` targets.
TARGETS = ("vertex", "local")


@contextmanager
def open_backend(target: str = "vertex", *, region: str | None = None, endpoint: str | None = None,
                 workdir: str | Path | None = None, job_output: TextIO | None = None,
                 gpus: GpuOptions | None = None, token: str | None = None) -> Iterator[JobBackend]:
    """A JobBackend for ``target``, closed when the block ends.

    - ``"vertex"``: Vertex AI in ``region``, or the emulator at ``endpoint`` (``HOST:PORT``),
      to which its calls carry ``token`` (default: the one vxtrain.backends.tokens finds);
    - ``"local"``: a new in-process emulator on loopback that runs jobs here (relative
      commands from ``workdir``, or from the spec's folder a create sends, see
      ``base.LocalRun``), stopped with every process of its jobs when the block
      ends. Its jobs print to ``job_output`` (default stderr) as well as to its
      Logging service; ``gpus`` says how their replicas share this host's GPUs.
      Only this process can talk to it: it serves with the private ``token`` (default: a
      new random one), never written anywhere, which the backend carries (``backend.token``)
      for the log readers its caller opens (``open_log_reader(endpoint, token=backend.token)``).
    """
    if target not in TARGETS:
        raise ValueError(f"unknown backend target {target!r}; expected one of {', '.join(TARGETS)}")
    # lazy: vertex imports google.cloud.aiplatform (+0.75 s); vxtrain.submission imports this
    # package, and `submit --help`, `status --help` and completing their options never call an API
    from vxtrain.backends.vertex import connect

    if target == "vertex":
        with connect(region, endpoint, token=token) as backend:
            yield backend
        return
    from vxtrain.backends.emulator import start_emulator  # lazy: grpc and aiplatform's types, as above
    from vxtrain.backends.emulator.auth import private  # lazy: as above (it imports grpc)

    # Reachable by this process alone: a private token, held in memory, never written, handed
    # to the client built here (and through backend.token to the log readers of its caller).
    served = private(token)
    with start_emulator(workdir=workdir, out=job_output, gpus=gpus, token=served) as handle:
        with connect(endpoint=handle.address, token=served.value) as backend:
            backend.in_process = True  # its jobs stop with this process (wait's Ctrl-C says so)
            yield backend


@contextmanager
def open_log_reader(endpoint: str | None = None, *, token: str | None = None) -> Iterator[LogReader]:
    """A LogReader for Cloud Logging, or for the emulator at ``endpoint`` (its calls carry
    ``token``, default: the one vxtrain.backends.tokens finds), closed when the block ends."""
    # lazy: google-cloud-logging (+48 ms) and aiplatform (through vertex); the logs path only
    from vxtrain.backends.cloud_logging import connect_logs

    reader = connect_logs(endpoint, token=token)
    try:
        yield reader
    finally:
        reader.close()
