"""A real headless Chromium for the tests of the pages vxtrain makes (the plan report, the ui).

Debian's ``chromium`` and ``chromium-driver`` packages, driven over WebDriver by selenium
(docs/decisions.md, "Browser tests"): the driver is the browser's own build, so the two
always match, and selenium is given its path, so Selenium Manager never runs (it would
look for, and download, a driver of its own). ``VXTRAIN_CHROMIUM`` and
``VXTRAIN_CHROMEDRIVER`` name other binaries.

Nothing the browser loads may leave the machine: every request a page makes is in the
performance log (``requests``), and any that is not local fails the test that asks; the
browser also sends every non-loopback request to a closed local port (a proxy on the
discard port), so a page that tried still reaches nothing. Missing pieces skip the tests,
saying what is missing; under CI (``CI`` set) they fail instead: ``.ci/run`` installs them.

Also here: :func:`png_pixels`, a small PNG decoder (zlib and the five filters) for
checking a screenshot without an imaging library.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.environment import under_ci

#: What .ci/run installs (Debian's package names) when a binary is missing.
PACKAGES = {"chromium": "chromium", "chromedriver": "chromium-driver"}
#: The window every page is opened in (a screenshot's size).
WINDOW = (1100, 900)
#: Launch flags: headless, nothing of a profile's own (first run, sync, component updates,
#: background fetches), no QUIC; a closed proxy for anything not on loopback.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--hide-scrollbars",
         "--proxy-server=http://127.0.0.1:9")
#: Schemes a page's request may use and stay on this machine (a loopback host is checked apart).
LOCAL_SCHEMES = frozenset({"file", "data", "about", "blob"})


def binaries() -> dict[str, str | None]:
    """The chromium and chromedriver to use (None: not found)."""
    return {"chromium": os.environ.get("VXTRAIN_CHROMIUM") or shutil.which("chromium"),
            "chromedriver": os.environ.get("VXTRAIN_CHROMEDRIVER") or shutil.which("chromedriver")}


def missing() -> list[str]:
    """What the browser tests need and this machine lacks, each with how to get it."""
    found = []
    try:
        import selenium  # noqa: F401  (the test extra's; a venv made without it lacks it)
    except ImportError:
        found.append("selenium (pip install -c requirements/lock.txt -e '.[test]')")
    for name, path in binaries().items():
        if path is None or not os.access(path, os.X_OK):
            found.append(f"{name} (Debian: apt-get install {PACKAGES[name]})")
    return found


def require_browser() -> None:
    """Skip (fail under CI) when the browser, its driver or selenium is missing."""
    lacking = missing()
    if not lacking:
        return
    reason = "the browser tests need " + ", ".join(lacking)
    if under_ci():
        pytest.fail(f"{reason}; under CI they must run, not skip (.ci/run installs chromium chromium-driver)",
                    pytrace=False)
    pytest.skip(reason)


@dataclass
class Browser:
    """One headless Chromium, reused by the tests of a session: ``open`` a page, read it."""

    driver: Any  # selenium.webdriver.Chrome
    #: The URLs requested since the page was opened (read from the log, which each read empties).
    seen: list[str] = field(default_factory=list)

    def open(self, url: str, *, scripts: bool = True) -> None:
        """Load ``url`` afresh (its earlier requests forgotten); ``scripts=False``: as a reader whose
        browser runs no JavaScript (the page's; the test's own WebDriver calls still work)."""
        self.driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": not scripts})
        self.driver.get("about:blank")
        self.driver.get_log("performance")  # drained: what follows is this page's
        self.seen = []
        self.driver.get(url)

    def requests(self) -> list[str]:
        """The URLs the page requested since it was opened (itself included)."""
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                self.seen.append(message["params"]["request"]["url"])
        return list(self.seen)

    def outside(self) -> list[str]:
        """The requests that would leave this machine: anything but files, data and loopback."""
        return [url for url in self.requests() if not _local(url)]

    def css(self, selector: str) -> list[Any]:
        """The elements matching a CSS selector, in document order."""
        from selenium.webdriver.common.by import By  # the test extra's: imported once a browser runs

        return list(self.driver.find_elements(By.CSS_SELECTOR, selector))

    def screenshot(self, *, full_page: bool = False) -> bytes:
        """A PNG of the window, or of the whole page (``full_page``) at the window's width."""
        if not full_page:
            return bytes(self.driver.get_screenshot_as_png())
        size = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
        shot = self.driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}})
        return base64.b64decode(shot["data"])


def _local(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return True
    return parts.scheme in ("http", "https", "ws", "wss") and parts.hostname in ("127.0.0.1", "localhost", "::1")


def start(window: tuple[int, int] = WINDOW) -> Iterator[Browser]:
    """Start Chromium (a fresh, empty profile) and yield it; quit it and remove the profile after."""
    from selenium import webdriver  # the test extra's: imported once a browser runs
    from selenium.webdriver.chrome.service import Service

    paths = binaries()
    assert paths["chromium"] is not None and paths["chromedriver"] is not None  # require_browser() came first
    with tempfile.TemporaryDirectory(prefix="vxtrain-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = paths["chromium"]
        for flag in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={window[0]},{window[1]}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
        driver = webdriver.Chrome(service=Service(paths["chromedriver"]), options=options)
        try:
            yield Browser(driver)
        finally:
            driver.quit()


# --- PNG, decoded ------------------------------------------------------------------------

@dataclass(frozen=True)
class Pixels:
    """A decoded image: ``rows`` of (R, G, B) tuples, top to bottom."""

    width: int
    height: int
    rows: list[list[tuple[int, int, int]]]

    def colours(self) -> dict[tuple[int, int, int], int]:
        """How many pixels have each colour."""
        counts: dict[tuple[int, int, int], int] = {}
        for row in self.rows:
            for pixel in row:
                counts[pixel] = counts.get(pixel, 0) + 1
        return counts


def png_pixels(data: bytes) -> Pixels:
    """Decode an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes): chunks, zlib, unfilter."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    chunks, at = {}, 8
    idat = b""
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        at += 12 + length
        if kind == b"IDAT":
            idat += body
        else:
            chunks[kind] = body
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unsupported PNG: depth {depth}, type {colour}"
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[list[tuple[int, int, int]]] = []
    previous = bytearray(stride)
    for y in range(height):
        line = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        current = _unfilter(line[0], bytearray(line[1:]), previous, channels)
        rows.append([(current[x], current[x + 1], current[x + 2]) for x in range(0, stride, channels)])
        previous = current
    return Pixels(width, height, rows)


def _unfilter(kind: int, line: bytearray, above: bytearray, bpp: int) -> bytearray:
    """Undo one scanline's filter (PNG spec, section 9: None, Sub, Up, Average, Paeth)."""
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up = above[i]
        corner = above[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + up) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            line[i] = (line[i] + _paeth(left, up, corner)) & 0xFF
    return line


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def write_png(path: Path, data: bytes) -> None:
    """Write a screenshot (for a look when a test fails, or for the docs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
