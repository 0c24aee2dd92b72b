"""Waiting in tests for what another process does (a build, a server, a port)."""

from __future__ import annotations

import time


def wait_until(condition, seconds: float, what: str):
    """The first true value of ``condition()``; fails the test if none comes in time."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{what} within {seconds:g} s")
