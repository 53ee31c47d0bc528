"""Waiting in tests for something another thread or server does."""

from __future__ import annotations

import time
from typing import Callable


def wait_for(condition: Callable[[], object], timeout: float = 10.0, interval: float = 0.02) -> bool:
    """Poll ``condition`` until it holds (then True); fail the test when ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:g} s"
        time.sleep(interval)
    return True
