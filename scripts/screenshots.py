#!/usr/bin/env python3
"""Regenerate the screenshots the README shows, in the headless Chromium the tests use.

    python scripts/screenshots.py                 # every image under docs/images/
    python scripts/screenshots.py plan-report.png # one of them

Needs what the browser tests need (tests/browser.py): Debian's ``chromium`` and
``chromium-driver``, and selenium from the test extra. Each image is a page vxtrain
makes, from a spec under configs/examples, so a change to the page shows in the next
regeneration; commit the PNGs it writes.

- ``plan-report.png``: ``vxtrain plan configs/examples/reduction-server.yaml
  --gradient-size 1.3GB --html OUT`` (Google's Reduction Server example).
- ``jobs-page.png``: ``vxtrain ui``'s jobs page over an emulator after a fallback ladder
  (us-central1 out of stock, us-east1 taken) and a recovery (the first us-east1 job
  preempted), a Spot job, and two jobs without a key, still queued.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.browser: the tests' own browser, flags and all

from tests import browser as chromium  # noqa: E402  (after the path)

IMAGES = ROOT / "docs" / "images"
#: The window the pages are shot in: wide enough for the report's tables, small enough a PNG.
WINDOW = (1000, 800)


def plan_report(shoot: chromium.Browser, out: Path) -> None:
    """The plan report of Google's Reduction Server example, the whole page."""
    from vxtrain.cli import main

    with tempfile.TemporaryDirectory(prefix="vxtrain-shots-") as tmp:
        page = Path(tmp) / "plan-report.html"
        # A path relative to the repository: the page names the spec as it was given.
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            code = main(["plan", "configs/examples/reduction-server.yaml", "--gradient-size", "1.3GB",
                         "--html", str(page), "-o", "json"])
        if code != 0:
            raise SystemExit(f"vxtrain plan exited {code}")
        shoot.open(page.as_uri(), scripts=False)
        png = shoot.screenshot(full_page=True)
        outside = shoot.outside()
    if outside:
        raise SystemExit(f"the report requested {outside}: it must fetch nothing")
    out.write_bytes(png)


def jobs_page(shoot: chromium.Browser, out: Path) -> None:
    """The ui's jobs table over an emulator that ran a ladder and a recovery, the window's top."""
    from vxtrain import api
    from vxtrain.backends import open_backend
    from vxtrain.backends.emulator import start_emulator
    from vxtrain.submission import Session
    from vxtrain.submission.ledger import Query
    from vxtrain.ui.server import start
    from vxtrain.ui.source import Source
    from vxtrain.vocab.kinds import CUSTOM

    central, east = "us-central1", "us-east1"
    with tempfile.TemporaryDirectory(prefix="vxtrain-shots-") as tmp, \
            start_emulator(simulate_seconds=1.5, out=io.StringIO(), stockout=[central], stockout_after=0.5,
                           preempt=[f"{east}:0.5:1"]) as emu:
        def submit(name: str, key: str, **fields: object) -> None:
            spec = Path(tmp) / f"{name}.yaml"
            spec.write_text(_spec_text(name, **fields))
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                api.submit(spec, endpoint=emu.address, idempotency_key=key, wait=True)

        submit("bert-finetune", "bert-finetune-2026-11-29", region=central, fallback=[{"region": east}],
               recovery={"max_recoveries": 2, "strategy": "same"},
               chief={"machine_type": "n1-standard-8", "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 1}})
        submit("eval-nightly", "eval-nightly-1129", region=east, scheduling={"strategy": "SPOT"})
        with open_backend(region=east, endpoint=emu.address) as backend:
            for name in ("adhoc-notebook-run", "resnet-sweep-7"):
                backend.create(CUSTOM, f"projects/my-project/locations/{east}", {
                    "displayName": name, "jobSpec": {"workerPoolSpecs": [{
                        "machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1",
                        "containerSpec": {"imageUri": "us-docker.pkg.dev/my-project/train/x:1"}}]}})
        with Session(endpoint=emu.address) as session, \
                start(Source.of(session, Query("my-project", (central, east))), root=Path(tmp)) as ui:
            size = shoot.driver.get_window_size()
            shoot.driver.set_window_size(1200, 760)  # the table's ten columns, as a laptop shows them
            try:
                shoot.open(ui.url)
                png = shoot.screenshot()
            finally:
                shoot.driver.set_window_size(size["width"], size["height"])
            outside = shoot.outside()
            shoot.driver.get("about:blank")
    if outside:
        raise SystemExit(f"the jobs page requested {outside}: it must fetch nothing off 127.0.0.1")
    out.write_bytes(png)


def _spec_text(name: str, **fields: object) -> str:
    import json

    spec: dict[str, object] = {"display_name": name, "project": "my-project", "labels": {"team": "nlp"},
                               "chief": {"machine_type": "n1-standard-4",
                                         "image": "us-docker.pkg.dev/my-project/train/bert:1"}}
    chief = fields.pop("chief", None)
    if isinstance(chief, dict):
        spec["chief"] = {**chief, "image": "us-docker.pkg.dev/my-project/train/bert:1"}
    return json.dumps({**spec, **fields})


SHOTS: dict[str, Callable[[chromium.Browser, Path], None]] = {"plan-report.png": plan_report,
                                                               "jobs-page.png": jobs_page}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"images to write (default: all of {', '.join(SHOTS)})")
    args = parser.parse_args()
    unknown = [name for name in args.names if name not in SHOTS]
    if unknown:
        parser.error(f"no such image: {', '.join(unknown)} (known: {', '.join(SHOTS)})")
    lacking = chromium.missing()
    if lacking:
        print("screenshots need " + ", ".join(lacking), file=sys.stderr)
        return 1
    os.chdir(ROOT)
    IMAGES.mkdir(parents=True, exist_ok=True)
    session = chromium.start(WINDOW)
    shoot = next(session)
    try:
        for name in args.names or SHOTS:
            SHOTS[name](shoot, IMAGES / name)
            size = (IMAGES / name).stat().st_size
            print(f"wrote {(IMAGES / name).relative_to(ROOT)} ({size // 1024} KiB)")
    finally:
        session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
