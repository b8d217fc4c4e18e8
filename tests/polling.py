"""Waiting in tests for something another process or thread does: one helper, one timeout rule."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(check: Callable[[], T], timeout: float, what: str, interval: float = 0.02) -> T:
    """Call ``check`` every ``interval`` seconds until it returns a true value, and return that value.

    Fails the test (``AssertionError``) when ``timeout`` seconds pass first, saying it
    waited for ``what`` (e.g. "the replica to record its pid") and what ``check`` last returned.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}; last check gave {value!r}")
        time.sleep(interval)
