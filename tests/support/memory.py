"""What a block of a test still holds when it ends, with no other thread counted in."""

from __future__ import annotations

import sys
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# Longer than any block measured here takes: no other thread is switched in before it ends.
ALONE_S = 30.0


@dataclass
class Held:
    """Filled in as the block ends."""

    bytes: int = 0


@contextmanager
def held_alone() -> Iterator[Held]:
    """Bytes the block allocated and still holds, while no other thread of the process runs.

    Why: tracemalloc counts the whole process, and a pytest worker still runs earlier tests'
    daemon threads (a spool's, a time-bounded call's), whose allocations meanwhile were counted
    too: a bound of 70 bytes a run failed once at 70.7. Python runs one thread at a time and
    hands over every ``sys.getswitchinterval()`` seconds or when the running thread waits; a
    long interval keeps the others out, so the block must not wait itself (no I/O, no lock, no
    sleep). Telling the block's allocations from others' by tracemalloc's tracebacks instead
    needs frames enough to reach the test's own, which made these tests several times slower.
    """
    held = Held()
    switching = sys.getswitchinterval()
    sys.setswitchinterval(ALONE_S)
    time.sleep(0.01)  # a thread already waiting for its turn on the old interval has it now
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        yield held
        held.bytes = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        sys.setswitchinterval(switching)
