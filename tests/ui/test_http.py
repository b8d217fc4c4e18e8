"""``vxtrain ui`` over plain HTTP against an emulator: who may read it (the token once in the
URL, then the cookie; the Host; read-only methods; cross-site requests; 127.0.0.1 only),
what the plan page opens (files under the ui's folder only), the pages' answers and the log
stream, and the command itself. Nothing mocked: a real server, a real emulator.
"""
from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import pytest

from tests.otheruser import as_nobody, need_another_user
from tests.ui.conftest import PROJECT, REGION, STEPS, World, create, ended
from vxtrain.backends import open_backend
from vxtrain.api import Options, check_file
from vxtrain.render.report import plan_report
from vxtrain.ui.guard import cookie_name, cookies
from vxtrain.ui.server import Ui
from vxtrain.vocab.kinds import CUSTOM

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
RS = ROOT / "configs" / "examples" / "reduction-server.yaml"


def get(ui: Ui, target: str, headers: dict[str, str] | None = None, method: str = "GET",
        body: bytes | None = None) -> tuple[int, dict[str, str], str]:
    """One request on a connection of its own: (status, headers, body)."""
    connection = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=30)
    try:
        connection.request(method, target, body=body, headers=headers or {})
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read().decode()
    finally:
        connection.close()


def login(ui: Ui) -> dict[str, str]:
    """The printed URL followed once: the cookie header it sets."""
    status, headers, _ = get(ui, _target(ui.url))
    assert status == 303, status
    name, _, value = headers["set-cookie"].partition(";")[0].partition("=")
    return {"Cookie": f"{name}={value}"}


def _target(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


# --- the token and its cookie ---------------------------------------------------------------

def test_without_the_token_every_page_is_401(ui: Ui, world: World) -> None:
    for target in ("/", "/fragments/jobs", f"/job?name={quote(world.lone)}", f"/job/logs?name={quote(world.lone)}",
                   "/plan", "/static/ui.js", "/nothing"):
        status, headers, body = get(ui, target)
        assert status == 401, target
        assert world.lone.rsplit("/", 1)[-1] not in body and "set-cookie" not in headers
        assert "open the URL `vxtrain ui` printed" in body


def test_the_printed_url_sets_a_strict_httponly_cookie_and_drops_the_token(ui: Ui, world: World) -> None:
    token = urlsplit(ui.url).query.removeprefix("token=")
    assert ui.url.startswith(f"http://127.0.0.1:{ui.port}/?token=") and len(token) >= 43
    status, headers, body = get(ui, _target(ui.url))
    assert status == 303 and headers["location"] == "/" and body == ""
    attributes = [part.strip() for part in headers["set-cookie"].split(";")]
    assert attributes[0] == f"vxtrain_ui_{ui.port}={token}"
    assert set(attributes[1:]) == {"Path=/", "HttpOnly", "SameSite=Strict"}
    status, _, body = get(ui, "/", login(ui))
    assert status == 200 and world.lone in body
    # The token leaves any URL it comes with, the rest of the query kept.
    status, headers, _ = get(ui, f"/job?{urlencode({'name': world.lone, 'token': token})}")
    assert status == 303 and headers["location"] == f"/job?{urlencode({'name': world.lone})}"


def test_a_wrong_token_or_cookie_is_403(ui: Ui) -> None:
    assert get(ui, "/?token=not-the-token")[0] == 403
    assert get(ui, "/?token=")[0] == 403
    token = urlsplit(ui.url).query.removeprefix("token=")
    assert get(ui, f"/?token={token}&token={token}")[0] == 403  # one token, once
    assert get(ui, "/", {"Cookie": f"vxtrain_ui_{ui.port}=not-the-token"})[0] == 403
    assert get(ui, "/", {"Cookie": f"vxtrain_ui_{ui.port}={token}x"})[0] == 403
    # Another port's cookie (another ui) is not this one's: none was sent.
    assert get(ui, "/", {"Cookie": f"vxtrain_ui_{ui.port + 1}={token}"})[0] == 401


def test_each_run_has_its_own_token(world: World, tmp_path: Path) -> None:
    from vxtrain.submission import Session
    from vxtrain.submission.ledger import Query
    from vxtrain.ui.server import start
    from vxtrain.ui.source import Source

    with Session(endpoint=world.handle.address) as session:
        with start(Source.of(session, Query(PROJECT, (REGION,))), root=tmp_path) as one:
            first = login(one)
        with start(Source.of(session, Query(PROJECT, (REGION,))), root=tmp_path, port=one.port) as two:
            assert two.url != one.url
            assert get(two, "/", first)[0] == 403  # the last run's cookie opens nothing


def test_only_the_hosts_of_this_port_are_answered(ui: Ui) -> None:
    """DNS rebinding: a name re-pointed at 127.0.0.1 sends its own Host, and is refused
    (cookie or not); so is the token."""
    cookie = login(ui)
    for host in ("evil.example", f"evil.example:{ui.port}", f"127.0.0.1:{ui.port + 1}", "127.0.0.1",
                 f"[::1]:{ui.port}", f"0.0.0.0:{ui.port}"):
        status, _, body = get(ui, "/", {**cookie, "Host": host})
        assert status == 403 and "DNS-rebinding" in body, host
        assert get(ui, _target(ui.url), {"Host": host})[0] == 403
    assert get(ui, "/", {**cookie, "Host": f"localhost:{ui.port}"})[0] == 200
    assert get(ui, "/", {**cookie, "Host": f"LOCALHOST:{ui.port}"})[0] == 200


def test_the_ui_is_read_only(ui: Ui) -> None:
    cookie = login(ui)
    for method in ("POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        status, headers, _ = get(ui, "/", cookie, method, b"x=1")
        assert status == 405 and headers["allow"] == "GET, HEAD", method
    status, headers, body = get(ui, "/", cookie, "HEAD")
    assert status == 200 and body == "" and int(headers["content-length"]) > 1000


def test_requests_another_site_starts_are_refused(ui: Ui) -> None:
    """Fetch Metadata: a script of another site (or another port of 127.0.0.1, 'same-site')
    reads nothing, even were the cookie sent; a link followed from elsewhere is a navigation."""
    cookie = login(ui)
    for site in ("cross-site", "same-site"):
        for target in ("/fragments/jobs", "/"):
            status, _, _ = get(ui, target, {**cookie, "Sec-Fetch-Site": site, "Sec-Fetch-Mode": "cors",
                                            "Sec-Fetch-Dest": "empty"})
            assert status == 403, (site, target)
        navigation = {"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
        assert get(ui, "/", {**cookie, **navigation})[0] == 200
        assert get(ui, _target(ui.url), navigation)[0] == 303
    own = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}
    assert get(ui, "/fragments/jobs", {**cookie, **own})[0] == 200


def test_it_listens_on_127_0_0_1_only(ui: Ui) -> None:
    assert ui.server.server_address[0] == "127.0.0.1"
    for address, family in (("127.0.0.2", socket.AF_INET), ("::1", socket.AF_INET6)):
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.settimeout(5)
            assert probe.connect_ex((address, ui.port)) != 0, address


def test_every_answer_forbids_other_origins_and_caching(ui: Ui) -> None:
    cookie = login(ui)
    for target in ("/", "/plan", "/static/ui.css", "/nothing"):
        _, headers, _ = get(ui, target, cookie)
        csp = headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
        assert "frame-ancestors 'none'" in csp and headers["x-frame-options"] == "DENY"
        assert headers["cache-control"] == "no-store" and headers["referrer-policy"] == "no-referrer"
    _, headers, _ = get(ui, "/", {"Host": "evil.example"})  # refusals too
    assert headers["cache-control"] == "no-store"


# --- pages -----------------------------------------------------------------------------------

def test_the_jobs_page_and_its_fragment_list_keys_attempts_and_rungs(ui: Ui, world: World) -> None:
    cookie = login(ui)
    status, _, page = get(ui, "/", cookie)
    assert status == 200
    assert '<tr class="key" data-key="release-1">' in page and '<tr class="key" data-key="">' in page
    for name in (*world.release, world.lone):
        assert f'data-name="{name}"' in page
        assert f'href="/job?{urlencode({"name": name})}"' in page
    assert page.index(world.release[0]) < page.index(world.release[1]) < page.index(world.lone)
    status, headers, fragment = get(ui, "/fragments/jobs", cookie)
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    assert fragment.startswith('<p class="meta"') and "<html" not in fragment
    assert all(f'data-name="{name}"' in fragment for name in (*world.release, world.lone))


def test_a_job_page_names_what_it_cannot_show(ui: Ui, world: World) -> None:
    cookie = login(ui)
    assert get(ui, "/job?name=not-a-job", cookie)[0] == 400
    assert get(ui, "/job", cookie)[0] == 400
    missing = world.lone.rsplit("/", 1)[0] + "/12345"
    status, _, body = get(ui, f"/job?{urlencode({'name': missing})}", cookie)
    assert status == 404 and "12345" in body
    assert get(ui, f"/job/logs?{urlencode({'name': missing})}", cookie)[0] == 404
    assert get(ui, "/nothing", cookie)[0] == 404
    assert get(ui, "/static/../pyproject.toml", cookie)[0] == 404
    assert get(ui, "/static/nothing.js", cookie)[0] == 404


def test_the_job_page_shows_its_key_the_cost_and_the_job_as_sent(ui: Ui, world: World) -> None:
    cookie = login(ui)
    status, _, page = get(ui, f"/job?{urlencode({'name': world.release[1]})}", cookie)
    assert status == 200
    assert 'class="facts" data-state="JOB_STATE_SUCCEEDED"' in page and "<dd>release-1</dd>" in page
    assert page.count('<g class="job ') == 2  # both attempts on the timeline
    assert '<section id="cost">' in page and "$0.2" in page  # n1-standard-4's $0.2185 / h (us-east1)
    sent = json.loads(page.split('<section id="sent">')[1].split("<code>")[1].split("</code>")[0]
                      .replace("&quot;", '"').replace("&#x27;", "'").replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&amp;", "&"))
    assert sent["displayName"] == "release" and sent["labels"]["vxtrain_attempt"] == "1"
    assert not {"name", "state", "createTime", "startTime", "endTime", "updateTime"} & set(sent)


def test_the_log_stream_sends_the_lines_then_the_end(ui: Ui, world: World) -> None:
    cookie = login(ui)
    status, headers, body = get(ui, f"/job/logs?{urlencode({'name': world.release[1]})}", cookie)
    assert status == 200 and headers["content-type"] == "text/event-stream; charset=utf-8"
    events = [_event(block) for block in body.strip().split("\n\n")]
    lines = [data for kind, data in events if kind == "log"]
    assert [line["text"] for line in lines if line["replica"] == "workerpool0-0"] == [f"step {i}" for i in range(12)]
    assert len({line["id"] for line in lines}) == len(lines)
    assert events[-1] == ("end", {"state": "JOB_STATE_SUCCEEDED"})
    assert ("state", {"state": "JOB_STATE_SUCCEEDED", "terminal": True}) in events


def test_a_refused_stream_falls_back_to_polling_and_says_so(ui: Ui, world: World) -> None:
    """A project has at most 10 tail sessions: refused one (RESOURCE_EXHAUSTED), the page is
    told (a ``note``) and its lines still come, read by ListLogEntries."""
    world.handle.add_fault("tail:quota:1")
    name = create(world.handle, STEPS, name="polled")
    status, _, body = get(ui, f"/job/logs?{urlencode({'name': name})}", login(ui))
    assert status == 200
    events = [_event(block) for block in body.strip().split("\n\n")]
    notes = [data["message"] for kind, data in events if kind == "note"]
    assert any("following the job's logs by polling ListLogEntries from now on" in n for n in notes), notes
    assert [d["text"] for k, d in events if k == "log" and d["replica"] == "workerpool0-0"] == [
        f"step {i}" for i in range(12)]
    assert events[-1] == ("end", {"state": "JOB_STATE_SUCCEEDED"})


def test_a_stream_open_when_the_ui_stops_ends_with_it(ui: Ui, world: World) -> None:
    """The follower's thread ends within a poll of the job (nothing left running: the
    suite's leak check), and the browser sees the connection close."""
    name = create(world.handle, "import time; print('up', flush=True); time.sleep(60)", name="long")
    connection = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=30)
    try:
        connection.request("GET", f"/job/logs?{urlencode({'name': name})}", headers=login(ui))
        answer = connection.getresponse()
        assert answer.status == 200
        assert answer.readline().startswith(b"event: ")
        started = time.monotonic()
        ui.stop()
        assert time.monotonic() - started < 10
        assert answer.read() is not None  # the rest, up to the close
    finally:
        connection.close()
        with open_backend(endpoint=world.handle.address) as backend:
            backend.cancel(CUSTOM, name)
        ended(world.handle, name)


def _event(block: str) -> tuple[str, Any]:
    fields = dict(line.split(": ", 1) for line in block.splitlines())
    return fields["event"], json.loads(fields["data"])


# --- the plan page: files under the ui's folder only ---------------------------------------

@pytest.fixture
def specs(tmp_path: Path) -> dict[str, Path]:
    """The ui's folder (tmp_path) with a spec and a folder; a spec outside it, a link to it."""
    inside = tmp_path / "rs.yaml"
    inside.write_text(RS.read_text())
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "train.yml").write_text(RS.read_text())
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "secret.yaml").write_text("x: 1\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.yaml"
    outside.write_text(RS.read_text())
    (tmp_path / "link.yaml").symlink_to(outside)
    return {"inside": inside, "outside": outside}


def _plan(ui: Ui, cookie: dict[str, str], given: str) -> tuple[int, str]:
    status, _, body = get(ui, f"/plan?{urlencode({'file': given})}", cookie)
    return status, body


def test_the_plan_page_is_the_plan_report(ui: Ui, specs: dict[str, Path], tmp_path: Path) -> None:
    cookie = login(ui)
    status, body = _plan(ui, cookie, "rs.yaml")
    assert status == 200
    assert body == plan_report(check_file(tmp_path / "rs.yaml", Options(cost=True)))
    assert _plan(ui, cookie, str(specs["inside"]))[0] == 200  # absolute, inside
    assert _plan(ui, cookie, "sub/train.yml")[0] == 200


def test_the_plan_page_opens_nothing_outside_the_ui_folder(ui: Ui, specs: dict[str, Path], tmp_path: Path) -> None:
    cookie = login(ui)
    outside = specs["outside"]
    for given in (f"../{outside.name}", str(outside), "sub/../rs.yaml", "link.yaml", "/etc/passwd",
                  f"{tmp_path}/../{outside.name}", "..\\rs.yaml"):
        status, body = _plan(ui, cookie, given)
        assert status == 403, given
        assert "bert-large" not in body and "root:" not in body
    # Encoded dots are dots once decoded: still refused.
    assert get(ui, "/plan?file=%2e%2e%2F" + outside.name, cookie)[0] == 403
    assert _plan(ui, cookie, "missing.yaml")[0] == 404
    assert _plan(ui, cookie, "sub")[0] == 404
    assert _plan(ui, cookie, "rs.yaml\0")[0] == 404


def test_the_plan_index_lists_the_specs_here(ui: Ui, specs: dict[str, Path]) -> None:
    status, _, body = get(ui, "/plan", login(ui))
    assert status == 200
    assert "rs.yaml" in body and "sub/train.yml" in body and "link.yaml" in body
    assert "secret.yaml" not in body and specs["outside"].name not in body


# --- the command ----------------------------------------------------------------------------

def test_vxtrain_ui_prints_the_url_once_and_stops_on_ctrl_c(world: World, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "vxtrain", "ui", "--endpoint", world.handle.address,
                                "--project", PROJECT, "--region", REGION], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        parts = urlsplit(url)
        assert parts.scheme == "http" and parts.hostname == "127.0.0.1" and parts.query.startswith("token=")
        connection = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=30)
        connection.request("GET", f"/?{parts.query}")
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 303
        connection.request("GET", "/", headers={"Cookie": answer.getheader("Set-Cookie", "").split(";")[0]})
        page = connection.getresponse().read().decode()
        assert world.lone in page
        connection.close()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert out == "" and parts.query.split("=", 1)[1] not in err  # the token: printed once
    assert "Ctrl-C stops it" in err and "vxtrain ui stopped" in err


def test_another_local_user_gets_nothing_from_a_running_ui(world: World, tmp_path: Path) -> None:
    """As ``nobody`` (setpriv): the ui's port answers 401 without the token and 403 with a wrong
    token or cookie, no page's content comes back, and the token is in neither the process's
    command line nor anything else of it nobody can read (/proc/PID/environ is the owner's)."""
    need_another_user()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "vxtrain", "ui", "--endpoint", world.handle.address,
                                "--project", PROJECT, "--region", REGION], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        parts = urlsplit(process.stdout.readline().strip())
        token = parts.query.split("=", 1)[1]
        base = f"http://127.0.0.1:{parts.port}"
        for target, cookie, expected in (("/", "", "401"), ("/?token=" + "0" * len(token), "", "403"),
                                         ("/", f"{cookie_name(parts.port or 0)}={'0' * len(token)}", "403")):
            fetched = as_nobody(["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "-H", f"Cookie: {cookie}",
                                 base + target])
            body, _, status = fetched.stdout.decode().rpartition("\n")
            assert status == expected, (target, cookie, fetched)
            assert world.lone not in body
        seen = as_nobody(["sh", "-c", f"cat /proc/{process.pid}/cmdline; cat /proc/{process.pid}/environ"])
        assert token.encode() not in seen.stdout and token.encode() not in seen.stderr
        assert b"Permission denied" in seen.stderr  # the environment is the owner's alone
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def test_vxtrain_ui_needs_a_project_and_a_region_and_a_free_port(world: World, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("GOOGLE_CLOUD_PROJECT", "CLOUD_ML_REGION")}
    done = subprocess.run([sys.executable, "-m", "vxtrain", "ui"], cwd=tmp_path, capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 2 and "the ui needs a project and a region" in done.stderr
    assert "Traceback" not in done.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = subprocess.run([sys.executable, "-m", "vxtrain", "ui", "--endpoint", world.handle.address, "--port",
                               str(taken.getsockname()[1])], cwd=tmp_path, capture_output=True, text=True,
                              env={**env, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 1 and "cannot serve the ui on port" in done.stderr and "Traceback" not in done.stderr


def test_validate_and_plan_never_load_the_ui() -> None:
    code = ("import sys; from vxtrain.cli import main; "
            f"[main([c, {str(RS)!r}]) for c in ('validate', 'plan')]; "
            "print(sorted(m for m in sys.modules if m.startswith('vxtrain.ui') or m == 'http.server'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stderr


def test_cookie_headers_are_read_as_browsers_send_them() -> None:
    assert cookies("a=1; vxtrain_ui_1=tok; b=") == {"a": "1", "vxtrain_ui_1": "tok", "b": ""}
    assert cookies("x=1; x=2;;  bare ; y = 3") == {"x": "1", "y": "3"}
    assert cookies("") == {}
