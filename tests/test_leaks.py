"""The suite's leak check (tests/conftest.py ``_no_leaks``, tests/leaks.py) on tests that leak on purpose.

They run in a pytest of their own (a subprocess), so what they leave cannot reach this run.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.polling import wait_for

LEAKY = '''
import subprocess, threading, time
from concurrent import futures
from pathlib import Path

import pytest

HERE = Path(__file__).parent  # the pid files go next to this file


def sleep_long() -> None:
    time.sleep(30)


def test_leaves_a_thread() -> None:
    threading.Thread(target=sleep_long, name="forgotten", daemon=True).start()


def test_leaves_a_process_group() -> None:
    """A shell in its own session, and a `sleep` it started in its group."""
    proc = subprocess.Popen(["sh", "-c", "sleep 600 & echo $! > grandchild; wait"], cwd=HERE,
                            start_new_session=True)
    (HERE / "child").write_text(str(proc.pid))
    while not (HERE / "grandchild").exists() or not (HERE / "grandchild").read_text().strip():
        time.sleep(0.01)


def test_a_thread_that_ends_within_the_grace_is_fine() -> None:
    threading.Thread(target=time.sleep, args=(0.2,)).start()


def test_what_it_stops_is_fine() -> None:
    proc = subprocess.Popen(["sleep", "600"])
    proc.kill()
    proc.wait()


@pytest.fixture(scope="module")
def kept_pool():
    with futures.ThreadPoolExecutor(2) as pool:
        yield pool


def test_a_pool_older_than_the_test_may_start_workers_in_it(kept_pool) -> None:
    kept_pool.submit(time.sleep, 0).result()  # its first worker starts now, and stays with the pool


KEPT = []  # something holding the pool, as a grpc server holds its executor


def test_leaves_a_pool() -> None:
    KEPT.append(futures.ThreadPoolExecutor(1, thread_name_prefix="forgotten-pool"))
    KEPT[-1].submit(time.sleep, 0).result()
'''


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="children are read from /proc")
def test_a_test_that_leaves_a_thread_or_a_process_fails_and_its_processes_are_killed(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text("from tests import leaks\n"
                                          "from tests.conftest import _no_leaks  # noqa: F401 - the fixture\n"
                                          "leaks.number_pools()  # as tests/conftest.py's pytest_configure does\n")
    (tmp_path / "test_leaky.py").write_text(LEAKY)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_leaky.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert re.search(r"\b6 passed, 3 errors\b", out), out  # a test passes, then its teardown errs
    errors = dict(re.findall(r"_ ERROR at teardown of (\w+) _+\n(.*?)\n(?=_|=)", out, re.S))
    assert sorted(errors) == ["test_leaves_a_pool", "test_leaves_a_process_group", "test_leaves_a_thread"], out
    child, grandchild = (int((tmp_path / name).read_text()) for name in ("child", "grandchild"))
    assert errors["test_leaves_a_thread"] == (
        "the test left running after it ended (+2 s):\n"
        f"  thread 'forgotten' (daemon): runs test_leaky.py:{LEAKY.splitlines().index('    time.sleep(30)') + 1} "
        "sleep_long\n"
        "stop what a test starts in a `finally:` block or in a fixture's teardown")
    assert re.match(r"  thread 'forgotten-pool_0': runs \S*concurrent/futures/thread\.py:\d+ _worker$",
                    errors["test_leaves_a_pool"].splitlines()[1]), errors["test_leaves_a_pool"]
    assert errors["test_leaves_a_process_group"].splitlines()[1] == (
        f"  process {child} (killed now): sh -c sleep 600 & echo $! > grandchild; wait")
    # the group is killed too: the shell's `sleep` (reparented, so not ours to reap: it may be a zombie briefly)
    wait_for(lambda: not _alive(grandchild), 5, f"the shell's sleep ({grandchild}) to end")
    assert not _alive(child)
