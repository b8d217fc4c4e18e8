"""``vxtrain plan FILE --html OUT``: the plan report, one self-contained HTML page.

Read two ways: as HTML text (what it holds, that it fetches and runs nothing), and in a
real headless Chromium (tests/browser.py) with scripts off, as a reader sees it: the
curve's drawn points against the plan's JSON, the pools with their empty slots, the
cost per pool, a screenshot that is not blank, and no request leaving the machine.
"""
from __future__ import annotations

import io
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import browser as chromium
from tests.incli import run
from tests.test_cli import _modules_loaded

ROOT = Path(__file__).resolve().parent.parent
RS = ROOT / "configs" / "examples" / "reduction-server.yaml"
#: Google's example all-reduces 1.3 GB in docs/reduction-server.md.
GRADIENT = "1.3GB"


class _Elements(HTMLParser):
    """Every start tag with its attributes, and the page's text, in document order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> _Elements:
    found = _Elements()
    found.feed(html)
    found.close()
    return found


def report(capsys: pytest.CaptureFixture[str], tmp_path: Path, spec: Path | str, *extra: str) -> tuple[int, Any, str]:
    """``vxtrain plan SPEC --html OUT -o json EXTRA``: (exit code, the plan JSON, the report's HTML)."""
    out = tmp_path / "report.html"
    code, doc, _ = run(capsys, "plan", str(spec), "--html", str(out), "-o", "json", *extra)
    return code, doc, out.read_text(encoding="utf-8")


def spec_file(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def gap_spec(tmp_path: Path) -> Path:
    """A chief and evaluators: workerPoolSpecs[1] and [2] are sent empty."""
    image = "gcr.io/p/t:1"
    return spec_file(tmp_path, {"display_name": "gaps", "region": "us-central1",
                                "scheduling": {"timeout": "10h"},
                                "chief": {"machine_type": "n1-standard-8", "image": image},
                                "evaluators": {"replicas": 2, "machine_type": "n1-standard-4", "image": image}})


# --- the page as HTML text ---------------------------------------------------------------

def test_the_report_is_one_page_that_fetches_and_runs_nothing(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    code, doc, html = report(capsys, tmp_path, RS, "--gradient-size", GRADIENT)
    assert code == 0 and doc["custom_job"] is not None
    page = parse(html)
    tags = [tag for tag, _ in page.tags]
    assert "script" not in tags and "svg" in tags and "style" in tags
    assert not {"link", "img", "iframe", "object", "embed"} & set(tags)  # no asset to fetch: all inline
    handlers = [(tag, name) for tag, attrs in page.tags for name in attrs if name.startswith("on")]
    assert handlers == []
    assert not re.search(r"url\((?!#)|@import|javascript:", html)  # url(#id): the chart's own clip path
    # The only external-looking strings are XML namespaces and the prices' cited sources (text).
    hrefs = [attrs.get("href") for _, attrs in page.tags if attrs.get("href")]
    assert hrefs == []


def test_html_leaves_the_json_as_it_is(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _, with_html, _ = report(capsys, tmp_path, RS, "--gradient-size", GRADIENT)
    code, without, err = run(capsys, "plan", str(RS), "--gradient-size", GRADIENT, "-o", "json")
    assert (code, with_html) == (0, without) and "wrote" not in err


@pytest.mark.slow
def test_the_report_module_is_imported_only_for_html(tmp_path: Path) -> None:
    """plan's cold start is unchanged: neither the report nor the curve loads without --html."""
    report_modules = ("vxtrain.render.report", "vxtrain.render.chart", "vxtrain.planning.curve")
    loaded = _modules_loaded(["plan", str(RS), "-o", "json"])
    assert not [m for m in loaded if m.startswith(report_modules)]
    loaded = _modules_loaded(["plan", str(RS), "-o", "json", "--html", str(tmp_path / "r.html")])
    assert set(report_modules) <= set(loaded)
    assert not [m for m in loaded if m.startswith(("google.cloud.aiplatform", "grpc", "vxtrain.submission"))]


def test_pools_keep_their_slots_and_empty_ones_show(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, doc, html = report(capsys, tmp_path, gap_spec(tmp_path))
    assert code == 0
    assert [bool(p) for p in doc["custom_job"]["jobSpec"]["workerPoolSpecs"]] == [True, False, False, True]
    slots = [(attrs["class"], attrs["data-index"]) for tag, attrs in parse(html).tags
             if tag == "li" and attrs.get("data-index") is not None]
    assert slots == [("pool", "0"), ("gap", "1"), ("gap", "2"), ("pool", "3")]


def test_one_training_node_has_no_curve_and_says_why(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _, _, html = report(capsys, tmp_path, gap_spec(tmp_path))
    assert "<svg" not in html
    assert "No curve: one training node: there is nothing to all-reduce across nodes." in html


def test_a_study_shows_its_search_space_and_one_trial_s_cost(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    code, doc, html = report(capsys, tmp_path, ROOT / "configs" / "examples" / "study.yaml")
    assert code == 0
    page = parse(html)
    text = " ".join(page.text)
    hpt = doc["hyperparameter_tuning_job"]
    for parameter in hpt["studySpec"]["parameters"]:
        assert parameter["parameterId"] in text
    assert f"Up to {hpt['maxTrialCount']} trials, {hpt['parallelTrialCount']} at a time" in text
    assert f"× {hpt['maxTrialCount']} trials" in text  # the cost's timeout column is per study


def test_a_ladder_lists_every_rung(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, doc, html = report(capsys, tmp_path, ROOT / "configs" / "examples" / "fallback-ladder.yaml")
    assert code == 0
    rungs = [attrs["data-rung"] for tag, attrs in parse(html).tags if tag == "tr" and "data-rung" in attrs]
    assert rungs == [str(n) for n in range(1 + len(doc["fallback"]))]
    for region in [doc["cost"]["region"], *(rung["region"] for rung in doc["fallback"])]:
        assert f"<td>{region}</td>" in html


def test_an_invalid_spec_s_report_has_its_diagnostics(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = spec_file(tmp_path, {"display_name": "bad", "region": "us-central1",
                               "chief": {"machine_type": "n1-standrad-8", "image": "i"}})
    code, doc, html = report(capsys, tmp_path, bad)
    assert code == 1 and doc["custom_job"] is None
    assert "unknown-machine-type" in html and "invalid: 1 error" in html
    assert 'id="pools"' not in html and 'id="cost"' not in html


def test_html_replaces_a_file_whole_and_refuses_a_folder(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    out = tmp_path / "deep" / "report.html"
    out.parent.mkdir()
    out.write_text("old")
    code, _, _ = run(capsys, "plan", str(RS), "--html", str(out), "-o", "json")
    assert code == 0 and out.read_text().startswith("<!doctype html>")
    assert sorted(p.name for p in out.parent.iterdir()) == ["report.html"]  # no temporary file left
    code, _, err = run(capsys, "plan", str(RS), "--html", str(tmp_path))
    assert code == 2 and "--html takes the path of the file to write" in err and "Traceback" not in err
    (tmp_path / "file").write_text("")
    code, _, err = run(capsys, "plan", str(RS), "--html", str(tmp_path / "file" / "r.html"))
    assert code == 1 and f"cannot write {tmp_path / 'file' / 'r.html'}" in err and "Traceback" not in err


def test_endpoint_is_only_for_check_quota(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", str(RS), "--endpoint", "127.0.0.1:9")
    assert code == 2 and "--endpoint is where --check-quota reads the limits" in err


# --- --check-quota -----------------------------------------------------------------------

T4 = "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"


@pytest.fixture
def quota_emulator() -> Iterator[Any]:
    from vxtrain.backends.emulator import start_emulator

    handle = start_emulator(out=io.StringIO(), quotas=("custom_model_training_nvidia_t4_gpus:us-central1=4",
                                                       "custom_model_training_cpus:us-central1=64"))
    try:
        yield handle
    finally:
        handle.stop(grace=None)


def t4_spec(tmp_path: Path, workers: int) -> Path:
    """A chief and ``workers`` workers of n1-standard-8 with 2 × T4 each."""
    return spec_file(tmp_path, {
        "display_name": "q", "project": "p", "region": "us-central1",
        "defaults": {"image": "gcr.io/p/t:1", "machine_type": "n1-standard-8",
                     "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 2}},
        "chief": {}, "workers": {"replicas": workers}})


@pytest.mark.slow
def test_check_quota_puts_needs_and_limits_in_the_report_and_the_json(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, quota_emulator: Any) -> None:
    code, doc, html = report(capsys, tmp_path, t4_spec(tmp_path, 2), "--check-quota",
                             "--endpoint", quota_emulator.address)
    assert code == 5  # 3 nodes × 2 T4 = 6 > 4: no capacity, as `vxtrain quota` says
    t4 = next(q for q in doc["quota"]["quotas"] if q["metric"] == T4)
    assert (t4["needed"], t4["limit"], t4["fits"], doc["quota"]["fits"]) == (6, 4, False, False)
    row = re.search(r"<tr><td><code>custom_model_training_nvidia_t4_gpus</code></td><td>[^<]*</td>"
                    r'<td class="num">(\d+)</td><td class="num">(\d+)</td><td>(.*?)</td></tr>', html)
    assert row is not None and row.groups() == ("6", "4", '<span class="fits-no">NO</span>')
    code, doc, html = report(capsys, tmp_path, t4_spec(tmp_path, 1), "--check-quota",
                             "--endpoint", quota_emulator.address)
    assert code == 0 and doc["quota"]["fits"] is True and 'id="quota"' in html
    code, text, _ = run(capsys, "plan", str(t4_spec(tmp_path, 2)), "--check-quota", "--endpoint", quota_emulator.address)
    assert code == 5 and "Quota (project p, us-central1)" in text and "custom_model_training_nvidia_t4_gpus" in text


def test_without_check_quota_nothing_is_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, doc, html = report(capsys, tmp_path, t4_spec(tmp_path, 2))
    assert code == 0 and "quota" not in doc and 'id="quota"' not in html


# --- in a real browser -------------------------------------------------------------------

def _floats(element: Any, *names: str) -> tuple[float, ...]:
    return tuple(float(element.get_attribute(name)) for name in names)


@pytest.mark.slow
def test_the_drawn_curve_is_the_plan_s(capsys: pytest.CaptureFixture[str], tmp_path: Path, browser: Any) -> None:
    """Every point of the curve is at the all-reduce time the plan's model gives for its replica
    count (worked out here from the JSON's figures), drawn where the axes put it; the ring, the
    cap and the chosen point are the JSON's own numbers."""
    _, doc, _ = report(capsys, tmp_path, RS, "--gradient-size", GRADIENT)
    browser.open((tmp_path / "report.html").as_uri(), scripts=False)
    bandwidth, allreduce = doc["bandwidth"], doc["bandwidth"]["allreduce"]
    size, nodes = allreduce["gradient_bytes"], allreduce["training_nodes"]
    node = allreduce["node_gbps"] * 1e9 / 8
    server = bandwidth["reduction_server"]["gbps_per_replica"] * 1e9 / 8

    def model(replicas: int) -> float:
        return max(size / node, nodes * size / (replicas * server))

    (svg,) = browser.css("svg.curve")
    assert svg.get_attribute("data-unit") == "seconds"
    left, top, width, height, x_max, y_max = _floats(svg, "data-left", "data-top", "data-plot-width",
                                                     "data-plot-height", "data-x-max", "data-y-max")
    points = browser.css("svg.curve circle.point")
    assert len(points) >= bandwidth["reduction_server"]["replicas_needed"]
    replicas = [int(p.get_attribute("data-replicas")) for p in points]
    assert replicas == sorted(set(replicas)) and replicas[0] == 1
    for point, count in zip(points, replicas):
        seconds, cx, cy = _floats(point, "data-seconds", "cx", "cy")
        assert seconds == pytest.approx(model(count), rel=1e-12)
        assert cx == pytest.approx(left + width * count / x_max, abs=0.01)
        assert cy == pytest.approx(top + height * (1 - seconds / y_max), abs=0.01)
    (chosen,) = browser.css("svg.curve circle.chosen")
    assert int(chosen.get_attribute("data-replicas")) == bandwidth["reduction_server"]["replicas"] == 16
    assert float(chosen.get_attribute("data-seconds")) == pytest.approx(allreduce["reduction_server_seconds"], rel=1e-12)
    (ring,) = browser.css("svg.curve line.ring")
    assert float(ring.get_attribute("data-seconds")) == pytest.approx(allreduce["ring_seconds"], rel=1e-12)
    assert float(ring.get_attribute("y1")) == pytest.approx(top + height * (1 - allreduce["ring_seconds"] / y_max), abs=0.01)
    (cap,) = browser.css("svg.curve line.cap")
    assert int(cap.get_attribute("data-replicas")) == bandwidth["reduction_server"]["replicas_needed"]
    (floor,) = browser.css("svg.curve line.floor")
    assert float(floor.get_attribute("data-seconds")) == pytest.approx(size / node, rel=1e-12)
    # What a reader sees: the summary with the JSON's times (166.4 ms ring, 104 ms planned).
    summary = browser.css("#bandwidth > p")[0].text
    assert "a ring takes 166 ms" in summary and "16 × n1-highcpu-16 take 104 ms" in summary


@pytest.mark.slow
def test_without_a_gradient_size_the_curve_is_relative_to_the_ring(capsys: pytest.CaptureFixture[str],
                                                                  tmp_path: Path, browser: Any) -> None:
    _, doc, _ = report(capsys, tmp_path, RS)
    assert "allreduce" not in doc["bandwidth"]
    browser.open((tmp_path / "report.html").as_uri(), scripts=False)
    (svg,) = browser.css("svg.curve")
    assert svg.get_attribute("data-unit") == "ring"
    (ring,) = browser.css("svg.curve line.ring")
    assert float(ring.get_attribute("data-of-ring")) == 1.0 and ring.get_attribute("data-seconds") is None
    (chosen,) = browser.css("svg.curve circle.chosen")
    assert float(chosen.get_attribute("data-of-ring")) == pytest.approx(5 / 8)  # S/B over 2·4/5·S/B
    assert "--gradient-size" in browser.css("#bandwidth")[0].text


@pytest.mark.slow
def test_pools_gaps_and_cost_read_in_the_browser(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                 browser: Any) -> None:
    _, doc, _ = report(capsys, tmp_path, gap_spec(tmp_path))
    browser.open((tmp_path / "report.html").as_uri(), scripts=False)
    cards = browser.css("ol.slots > li")
    assert [c.get_attribute("class") for c in cards] == ["pool", "gap", "gap", "pool"]
    assert "chief" in cards[0].text and "1 × n1-standard-8" in cards[0].text
    assert "empty slot" in cards[1].text and "workerPoolSpecs[2]" in cards[2].text
    assert "evaluators" in cards[3].text and "2 × n1-standard-4" in cards[3].text
    cost = doc["cost"]
    assert cost["timeout_hours"] == 10
    for pool in cost["pools"]:
        (row,) = browser.css(f'table.cost tr[data-pool="{pool["pool"]}"]')
        cells = [cell.text for cell in row.find_elements("css selector", "td")]
        assert cells[1] == pool["role"] and cells[2] == str(pool["replicas"])
        assert _usd(cells[5]) == pytest.approx(pool["per_hour"], abs=5e-5)
        assert _usd(cells[6]) == pytest.approx(pool["per_hour"] * cost["timeout_hours"], abs=5e-3)
    (total,) = browser.css("table.cost tr.total")
    assert _usd(total.find_elements("css selector", "td")[-2].text) == pytest.approx(cost["max_total"], abs=5e-3)


def _usd(text: str) -> float:
    return float(text.lstrip("$").replace(",", ""))


@pytest.mark.slow
def test_a_screenshot_of_the_report_is_not_blank(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                 browser: Any) -> None:
    report(capsys, tmp_path, RS, "--gradient-size", GRADIENT)
    browser.open((tmp_path / "report.html").as_uri(), scripts=False)
    page = chromium.png_pixels(browser.screenshot())
    colours = page.colours()
    white = colours.get((255, 255, 255), 0)
    assert len(colours) > 50 and white < 0.95 * page.width * page.height  # text, cards, lines: not one colour
    (svg,) = browser.css("svg.curve")
    chart = chromium.png_pixels(svg.screenshot_as_png).colours()
    # The curve's blue, the ring's red and the cap's green (the report's CSS) were painted.
    for colour in ((0x0B, 0x57, 0xD0), (0xB3, 0x26, 0x1E), (0x1E, 0x7A, 0x34)):
        assert chart.get(colour, 0) > 20, colour


@pytest.mark.slow
def test_no_request_leaves_the_page(capsys: pytest.CaptureFixture[str], tmp_path: Path, browser: Any) -> None:
    report(capsys, tmp_path, RS, "--gradient-size", GRADIENT)
    url = (tmp_path / "report.html").as_uri()
    browser.open(url, scripts=False)
    browser.screenshot(full_page=True)  # everything laid out and painted
    assert browser.requests() == [url] and browser.outside() == []


@pytest.mark.slow
def test_the_request_check_sees_a_page_that_fetches(tmp_path: Path, browser: Any) -> None:
    """The check above can fail: a page with a remote image and stylesheet is caught (the
    browser's closed proxy keeps them from reaching anything)."""
    page = tmp_path / "fetches.html"
    page.write_text('<!doctype html><link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">'
                    '<img src="http://example.com/pixel.png" alt="">')
    browser.open(page.as_uri(), scripts=False)
    browser.screenshot()
    assert sorted(browser.outside()) == ["http://example.com/pixel.png",
                                         "https://fonts.googleapis.com/css?family=Roboto"]


def test_png_pixels_reads_every_filter() -> None:
    """The screenshot check's decoder against a PNG built by hand with each of the five filters."""
    import struct
    import zlib

    width, rows = 3, [[(10, 20, 30), (40, 50, 60), (250, 5, 128)], [(1, 2, 3), (200, 100, 50), (9, 9, 9)]]
    raw = [bytes(v for px in row for v in px) for row in rows * 3]
    filtered = b""
    previous = bytes(width * 3)
    for kind, line in enumerate(raw[:5]):
        filtered += bytes([kind]) + _filter(kind, line, previous)
        previous = line

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, 5, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(filtered)) + chunk(b"IEND", b""))
    decoded = chromium.png_pixels(png)
    assert (decoded.width, decoded.height) == (3, 5)
    assert decoded.rows == [list(r) for r in (rows * 3)[:5]]


def _filter(kind: int, line: bytes, above: bytes) -> bytes:
    """PNG's filter ``kind`` applied to one scanline of 3-byte pixels (the inverse of the decoder's)."""
    out = bytearray()
    for i, value in enumerate(line):
        left = line[i - 3] if i >= 3 else 0
        corner = above[i - 3] if i >= 3 else 0
        predictor = [0, left, above[i], (left + above[i]) // 2, chromium._paeth(left, above[i], corner)][kind]
        out.append((value - predictor) & 0xFF)
    return bytes(out)


def test_missing_browser_skips_saying_what_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VXTRAIN_CHROMEDRIVER", "/nonexistent/chromedriver")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"chromedriver \(Debian: apt-get install chromium-driver\)"):
        chromium.require_browser()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="under CI they must run"):
        chromium.require_browser()


def test_ci_installs_the_browser() -> None:
    """.ci/run's apt line names Debian's packages for both binaries, so CI runs these tests."""
    ci = (ROOT / ".ci" / "run").read_text()
    for command, package in chromium.PACKAGES.items():
        assert f"{command}:{package}" in ci


def test_a_job_on_a_persistent_resource_names_its_machines_at_no_charge(capsys: pytest.CaptureFixture[str],
                                                                        tmp_path: Path) -> None:
    code, doc, html = report(capsys, tmp_path, ROOT / "configs" / "examples" / "persistent-resource.yaml")
    assert code == 0 and doc["cost"]["pricing"] == "persistent_resource"
    for pool in doc["cost"]["pools"]:
        assert re.search(rf'<tr data-pool="{pool["pool"]}">.*?<td>{re.escape(pool["machine_type"])}</td>'
                         r'<td class="num">\$0\.0000</td>', html)
    assert "billed for as long as it is running" in html
