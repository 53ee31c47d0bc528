"""One sync Playwright driver per thread, shared by the browsers that thread opens.

Playwright's sync API binds a driver to the thread that started it, and starting one costs a Node process;
a count per thread starts it for the first browser and stops it with the last.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger(__name__)

_local = threading.local()


def acquire_playwright() -> Any:
    """This thread's Playwright driver, started on first use."""
    if getattr(_local, "count", 0) == 0:
        from playwright.sync_api import sync_playwright

        _local.driver = sync_playwright().start()
        _local.count = 0
    _local.count += 1
    return _local.driver


def release_playwright() -> None:
    """One user fewer; the last one stops the driver."""
    _local.count -= 1
    if _local.count == 0:
        driver, _local.driver = _local.driver, None
        try:
            driver.stop()
        except Exception as exc:  # the driver may already be gone
            log.debug("playwright stop failed: %s", exc)
