"""A search read ahead of its caller (``tracking.experiment._ahead``): the results come in order,
and no more than a few are made before the caller takes them, however slow the caller."""

from __future__ import annotations

import threading
import time

from mlflow_fingerprint.tracking import experiment as reads


def test_results_come_in_order_and_only_a_few_ahead_of_a_slow_caller() -> None:
    made: list[int] = []
    lock = threading.Lock()

    def fn(x: int) -> int:
        time.sleep(0.002 * (x % 3))  # out of order, as a server's slices finish
        with lock:
            made.append(x)
        return x * x

    items = list(range(40))
    ahead = []
    got = []
    for result in reads._ahead(fn, items):
        got.append(result)
        time.sleep(0.01)  # the caller makes its records of each
        with lock:
            ahead.append(len(made) - len(got))
    assert got == [x * x for x in items]
    assert max(ahead) <= reads.SEARCH_AHEAD
    assert max(ahead) >= 1  # read ahead at all: the slices overlap the caller's work
