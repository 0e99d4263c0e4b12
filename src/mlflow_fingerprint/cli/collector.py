"""The cyclic garbage collector of a ``fingerprint`` process: off while its command starts, and
kept away from what the process holds when it ends.

A command imports MLflow and, on a sqlite store, SQLAlchemy and the sixty-odd migration scripts
alembic reads to check the schema: some 400,000 objects, next to none of them garbage. Python
collects its youngest objects every 700 allocations and, as the heap grows, walks all of it
again: ``fingerprint diff A B`` on a sqlite file ran 676 collections, 0.5 to 0.7 s of its
2.6 to 3.7 s. Then the interpreter's shutdown collects everything once more, whatever the
collector's setting: ``import mlflow`` and its SQLAlchemy store took 3.6 to 3.9 s as a process
here, 2.7 s when everything was frozen (``gc.freeze``) before the end.

So a command runs with the collector off, and when it ends everything is frozen: the shutdown's
collections walk none of it (the objects are freed with the process; what closes files, connections
and spools runs before, from ``atexit``). A command still running after ``PAUSE_S`` (a bisect,
a sync of a long spool, an explanation of a large experiment) freezes what it holds then and
turns the collector back on: the imports are never walked again, and what it allocates from
then on is collected as usual. Only the ``fingerprint`` process and the run describer do this
(their ``__main__``): the package never touches the collector of a program that imports it.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

PAUSE_S = 10.0


@contextlib.contextmanager
def held_off(seconds: float = PAUSE_S) -> Iterator[None]:
    """The collector off for the body's first ``seconds``, then on over a frozen heap; at the
    end, everything frozen and the collector on. For the body of a process's ``__main__``: what
    is frozen is never collected again. A collector already off or frozen is left alone."""
    if not gc.isenabled() or gc.get_freeze_count():  # the caller manages it
        yield
        return
    lock = threading.Lock()

    def resume() -> None:
        with lock:
            if not gc.isenabled():
                gc.freeze()
                gc.enable()

    gc.disable()
    timer = threading.Timer(seconds, resume)
    timer.daemon = True  # never keeps the process alive
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:  # a timer firing now finds the collector on and does nothing
            gc.freeze()
            gc.enable()
