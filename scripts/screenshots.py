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


SHOTS: dict[str, Callable[[chromium.Browser, Path], None]] = {"plan-report.png": plan_report}


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
