"""``vxtrain ui`` in a real headless Chromium (tests/browser.py: Debian's chromium and
chromedriver over selenium, a closed proxy for anything off loopback, every request logged),
against an emulator with a recovered job: the jobs appear; a new job appears without a
reload; a job's log lines arrive while it runs; its timeline draws each attempt; the pages
are painted (screenshots checked); no request leaves 127.0.0.1.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from tests import browser as chromium
from tests.polling import wait_for
from tests.ui.conftest import World, create
from vxtrain.ui.server import Ui

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: The colours of the ui's stylesheet a painted page must show: the succeeded run's green,
#: the failed run's red (the timeline's bars).
GREEN, RED = (0x1E, 0x7A, 0x34), (0xB3, 0x26, 0x1E)
#: A job that prints a line every 0.2 s for about 5 s.
TICKS = "import time\nfor i in range(25):\n    print(f'tick {i}', flush=True)\n    time.sleep(0.2)\n"


def enter(browser: Any, ui: Ui, path: str = "/") -> None:
    """Open the printed URL (the token sets the cookie), then ``path``."""
    browser.open(ui.url)
    wait_for(lambda: urlsplit(browser.driver.current_url).query == "", 10, "the token to leave the URL")
    if path != "/":
        browser.driver.get(f"http://127.0.0.1:{ui.port}{path}")


def leave(browser: Any) -> None:
    """A blank page: the last page's script and log stream end with it."""
    browser.driver.get("about:blank")


@pytest.fixture
def page(browser: Any) -> Any:
    try:
        yield browser
    finally:
        leave(browser)


def job_names(browser: Any) -> list[str]:
    """The rows' job names, read in one script call (the table may be replaced between two calls)."""
    return list(browser.driver.execute_script(
        "return [...document.querySelectorAll('#jobs tr.job')].map((row) => row.dataset.name);"))


def summary_state(browser: Any) -> str:
    return str(browser.driver.execute_script("return document.querySelector('#summary dl.facts').dataset.state;"))


def test_the_jobs_of_an_emulator_with_a_recovered_job_appear(page: Any, ui: Ui, world: World,
                                                               tmp_path: Path) -> None:
    enter(page, ui)
    assert page.driver.current_url == f"http://127.0.0.1:{ui.port}/"
    assert page.driver.get_cookie(f"vxtrain_ui_{ui.port}")["httpOnly"] is True
    assert job_names(page) == [*world.release, world.lone]
    (release,) = page.css('tr.key[data-key="release-1"]')
    assert "2 jobs, 2 attempts" in release.text and "SUCCEEDED" in release.text
    rows = page.css("tbody.key")[0].find_elements("css selector", "tr.job")
    cells = [[cell.text for cell in row.find_elements("css selector", "td")] for row in rows]
    assert [(c[0], c[1], c[5]) for c in cells] == [("0", "0", "FAILED"), ("1", "0", "SUCCEEDED")]
    assert all(c[2] == "us-east1" and c[4] == "n1-standard-4" and c[9].startswith("$") for c in cells)
    shot = chromium.png_pixels(page.screenshot())
    colours = shot.colours()
    assert len(colours) > 50 and colours.get((255, 255, 255), 0) < 0.97 * shot.width * shot.height
    chromium.write_png(tmp_path / "jobs.png", page.screenshot())
    assert page.outside() == []
    assert not [url for url in page.requests() if urlsplit(url).hostname not in ("127.0.0.1", None)]


def test_a_new_job_appears_without_a_reload(page: Any, ui: Ui, world: World) -> None:
    enter(page, ui)
    page.driver.execute_script("window.vxtrainMarker = 'this page, never reloaded';")
    (section,) = page.css("#jobs")  # the section stays; its content is replaced
    assert section.get_attribute("data-refresh-s") == "2.0"
    name = create(world.handle, name="newcomer")
    wait_for(lambda: name in job_names(page), 30, "the new job's row")
    assert page.driver.execute_script("return window.vxtrainMarker;") == "this page, never reloaded"
    assert int(section.get_attribute("data-refreshes")) >= 1
    assert "newcomer" in page.driver.execute_script(
        f"return document.querySelector('tr.job[data-name=\"{name}\"]').textContent;")
    assert page.outside() == []


def test_log_lines_arrive_while_the_job_runs(page: Any, ui: Ui, world: World) -> None:
    name = create(world.handle, TICKS, name="ticker")
    enter(page, ui, "/job?" + urlencode({"name": name}))

    def ticks() -> list[str]:
        return [line.text for line in page.css("#logs span.line") if "tick" in line.text]

    first = wait_for(ticks, 30, "the first lines")
    assert len(first) < 25, "every line came at once: not followed live"
    assert page.css("#logs")[0].get_attribute("data-ended") is None
    wait_for(lambda: page.css("#logs")[0].get_attribute("data-ended") == "true", 60, "the stream's end")
    assert ticks() == [f"[workerpool0-0] tick {i}" for i in range(25)]
    assert "The job ended SUCCEEDED: " in page.css("#logs-status")[0].text
    # The summary follows the job's state in place, without a reload.
    wait_for(lambda: summary_state(page) == "JOB_STATE_SUCCEEDED", 30, "the summary to say SUCCEEDED")
    assert page.outside() == []


def test_the_timeline_draws_each_attempt_of_the_recovered_key(page: Any, ui: Ui, world: World,
                                                               tmp_path: Path) -> None:
    enter(page, ui, "/job?" + urlencode({"name": world.release[0]}))
    wait_for(lambda: page.css("#logs")[0].get_attribute("data-ended") == "true", 60, "the stream's end")
    assert "step 0" in page.css("#logs")[0].text
    bars = page.css("#timeline svg g.job")
    assert [(b.get_attribute("data-name"), b.get_attribute("data-attempt"), b.get_attribute("data-state"))
            for b in bars] == [(world.release[0], "0", "JOB_STATE_FAILED"),
                               (world.release[1], "1", "JOB_STATE_SUCCEEDED")]
    assert len(bars[0].find_elements("css selector", "rect.current")) == 1  # this job outlined
    assert not bars[1].find_elements("css selector", "rect.current")
    # Attempt 1 starts after attempt 0 ended: its bar lies to the right.
    first_end = max(float(r.get_attribute("x")) + float(r.get_attribute("width"))
                    for r in bars[0].find_elements("css selector", "rect.queued, rect.ran"))
    second_start = float(bars[1].find_elements("css selector", "rect.queued")[0].get_attribute("x"))
    assert second_start >= first_end - 1
    shot = page.screenshot(full_page=True)
    chromium.write_png(tmp_path / "job.png", shot)
    colours = chromium.png_pixels(shot).colours()
    assert colours.get(GREEN, 0) > 50 and colours.get(RED, 0) > 50  # the bars were painted
    assert page.outside() == []


def test_the_plan_page_is_the_report_with_its_curve(page: Any, ui: Ui, tmp_path: Path) -> None:
    (tmp_path / "rs.yaml").write_text((ROOT / "configs" / "examples" / "reduction-server.yaml").read_text())
    enter(page, ui, "/plan")
    (link,) = [a for a in page.css("ul.specs a") if a.text == "rs.yaml"]
    link.click()
    wait_for(lambda: page.css("svg.curve"), 30, "the report's curve")
    assert page.driver.title == "bert-large-rs: vxtrain plan"
    assert page.outside() == []


def test_the_pages_policy_stops_a_request_elsewhere(page: Any, ui: Ui) -> None:
    """Were a script of the page to ask another host (an injected one, say), the ui's
    Content-Security-Policy (connect-src 'self') refuses it before it is sent: the browser
    reports the violation and the request log has nothing off loopback."""
    enter(page, ui)
    blocked = page.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "document.addEventListener('securitypolicyviolation', (e) => done(`${e.blockedURI} ${e.effectiveDirective}`));"
        "fetch('http://example.com/x').catch(() => null);")
    assert blocked == "http://example.com/x connect-src"
    assert page.outside() == []
