#!/usr/bin/env python3
"""API calls per followed job-hour: following a job's lines by TailLogEntries stream vs by
polling ListLogEntries, counted by the emulator (its ``calls`` counter), in one run.

    python scripts/log_calls.py                 # a 60 s run stands for one job-hour
    python scripts/log_calls.py --seconds 30    # quicker: 30 s stand for the hour
    python scripts/log_calls.py --json

One job-hour is played time-scaled: the job runs ``--seconds`` seconds, and every
interval of the follower (vxtrain.joblogs.VERTEX_LOGS: Cloud Logging's cadence) and of
the state polls (vxtrain.submission.retry.VERTEX_POLL) is divided by the same factor
(3600 / seconds), so each counts the calls it would make following a Vertex AI job for
an hour. Two jobs per mode: a chatty one (a line every scaled second) and a quiet one (a
line every scaled five minutes), since the poller backs off while nothing comes. The
follower is vxtrain's own (Follower + LogWatch, the loop ``wait`` runs), against the
emulator's LoggingServiceV2, through the real google-cloud-logging client.
"""
from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vxtrain import submit  # noqa: E402 - after the path: the script runs from a checkout
from vxtrain.backends import open_backend, open_log_reader  # noqa: E402
from vxtrain.backends.emulator import start_emulator  # noqa: E402
from vxtrain.joblogs import VERTEX_LOGS, Follower, LogWatch  # noqa: E402
from vxtrain.submission.names import split_name  # noqa: E402
from vxtrain.submission.retry import VERTEX_POLL  # noqa: E402
from vxtrain.vocab.kinds import CUSTOM, TERMINAL_STATES  # noqa: E402

HOUR = 3600.0
#: Seconds (of the hour) between two lines of each job.
JOBS = {"chatty": 1.0, "quiet": 300.0}


def _spec(folder: Path, seconds: float, every: float) -> Path:
    code = (f"import time\nend = time.monotonic() + {seconds}\n"
            f"while time.monotonic() < end:\n    print('step', flush=True); time.sleep({every})")
    path = folder / "job.yaml"
    path.write_text("\n".join([
        "display_name: log-calls", "chief:", "  machine_type: n1-standard-4",
        "  image: us-docker.pkg.dev/p/r/train:1",
        f"  command: [{json.dumps(sys.executable)}, -c, {json.dumps(code)}]"]) + "\n")
    return path


def _follow(address: str, name: str, scale: float, stream: bool) -> int:
    """Follow job ``name`` to its end as ``wait`` does, every interval divided by ``scale``;
    return the lines shown."""
    cadence = replace(VERTEX_LOGS, initial=VERTEX_LOGS.initial / scale, maximum=VERTEX_LOGS.maximum / scale,
                      overlap=VERTEX_LOGS.overlap / scale, grace=VERTEX_LOGS.grace / scale,
                      opening=VERTEX_LOGS.opening / scale)
    shown: list[Any] = []
    project, _, _, job_id = split_name(name)
    with open_backend(endpoint=address) as api, open_log_reader(address) as reader:
        watch = LogWatch(Follower(reader, project, job_id, cadence=cadence), shown.extend,
                         warn=lambda message: print(f"warning: {message}", file=sys.stderr), stream=stream)
        delay = VERTEX_POLL.initial
        try:
            while api.get(CUSTOM, name)["state"] not in TERMINAL_STATES:
                watch.sleep(delay / scale)
                delay = min(delay * VERTEX_POLL.multiplier, VERTEX_POLL.maximum)
            watch.finish()
        finally:
            watch.close()
    return len(shown)


def measure(seconds: float) -> dict[str, dict[str, Any]]:
    """Calls of one followed job-hour, per mode and job, as the emulator counted them."""
    scale = HOUR / seconds
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp, start_emulator(out=io.StringIO()) as emu:
        for job, every in JOBS.items():
            for mode in ("stream", "poll"):
                name = submit(_spec(Path(tmp), seconds, every / scale), endpoint=emu.address,
                              quota_check=False)["name"]
                before, started = emu.calls.snapshot(), time.monotonic()
                lines = _follow(emu.address, name, scale, stream=mode == "stream")
                after, elapsed = emu.calls.snapshot(), time.monotonic() - started
                delta = {m: after.get(m, 0) - before.get(m, 0)
                         for m in ("TailLogEntries", "ListLogEntries", "GetCustomJob")}
                figures[f"{mode}/{job}"] = {**delta, "lines": lines, "hours": round(elapsed / seconds, 3),
                                            "log_calls": delta["TailLogEntries"] + delta["ListLogEntries"]}
    return figures


def main() -> int:
    """Measure, and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the played hour lasts (default 60)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    figures = measure(args.seconds)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"calls per followed job-hour (played in {args.seconds:g} s):")
    for key, f in figures.items():
        print(f"  {key:15} log calls {f['log_calls']:4} (Tail {f['TailLogEntries']}, List {f['ListLogEntries']}), "
              f"state polls {f['GetCustomJob']:4}, {f['lines']} lines, {f['hours']} h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
