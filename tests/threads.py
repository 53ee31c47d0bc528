"""Run one test worker on many threads at once, and fail the test with any error a thread hit."""

from __future__ import annotations

import threading
from typing import Callable


def run_in_threads(worker: Callable[[int], None], n: int, join_s: float) -> None:
    """``worker(i)`` for ``i`` in ``range(n)``, all started before any is joined; a thread's error fails the caller."""
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            worker(i)
        except BaseException as exc:  # surfaced below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(join_s)
    assert not any(thread.is_alive() for thread in threads), f"a worker still runs after {join_s} s"
    assert not errors, errors
