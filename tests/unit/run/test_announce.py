"""A run's closing line (``run/announce.py``): the command it suggests, and the run it is best
compared with, looked up in a real sqlite store. The line printed at the end of a real run, and
the detached describer, are ``tests/system``'s (``test_run_announce.py``)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from mlflow_fingerprint.run import announce
from mlflow_fingerprint.run.announce import Previous, hint, look_up, previous_run_id
from support.records import cpu_capture, log_run, new_store, seeded


def test_the_first_run_is_shown_and_a_later_one_compared_with_its_previous() -> None:
    assert hint("r2", None, "") == ("look at it", "fingerprint show r2")
    where = " --tracking-uri http://mlflow:5000"
    assert hint("r2", "r1", where) == (
        "compare it with the previous run",
        f"fingerprint diff r1 r2{where}",
    )


def test_the_previous_run_has_the_same_recipe_where_one_does(
    tmp_path: Path, mlflow_db_template: Path
) -> None:
    uri = new_store(tmp_path, mlflow_db_template)
    x, y = seeded(cpu_capture(), 1), seeded(cpu_capture(), 2)
    assert x["hashes"]["recipe"] != y["hashes"]["recipe"]
    ids = []
    for name, record in (("first", x), ("other", y), ("again", x)):
        ids.append(log_run(uri, "e", name, record, {"loss": [1.0]}))
        time.sleep(0.01)  # runs start in order, a millisecond apart at least
    first, other, again = ids

    def previous(run_id: str) -> str | None:
        found = Previous()
        look_up(uri, run_id, found)
        assert found.known.is_set()
        return found.run_id

    assert previous(again) == first  # the same recipe, though "other" is later
    assert previous(other) == first  # none with its recipe: the latest before it
    assert previous(first) is None


def test_a_store_that_cannot_answer_leaves_the_answer_unknown(tmp_path: Path) -> None:
    found = Previous()
    look_up(f"sqlite:///{tmp_path / 'missing' / 'x.db'}", "r1", found)
    assert not found.known.is_set()
    assert found.run_id is None


def test_a_store_slower_than_the_wait_leaves_the_answer_to_the_lookup_still_running(
    tmp_path: Path, mlflow_db_template: Path
) -> None:
    """The end of a run waits ``WAIT_S`` for the lookup, no longer: a store held by another
    writer (a real exclusive lock on the sqlite file) answers later, and the hint is ``show``."""
    uri = new_store(tmp_path, mlflow_db_template)
    first = log_run(uri, "e", "first", seeded(cpu_capture(), 1), {"loss": [1.0]})
    time.sleep(0.01)
    second = log_run(uri, "e", "second", seeded(cpu_capture(), 1), {"loss": [1.0]})
    holder = sqlite3.connect(tmp_path / "mlflow.db", isolation_level=None)
    holder.execute("begin exclusive")
    try:
        started = time.monotonic()
        found = previous_run_id(uri, second)
        waited = time.monotonic() - started
        assert not found.known.is_set()
        assert announce.WAIT_S <= waited < announce.WAIT_S + 5
        assert [t for t in threading.enumerate() if t.name == "mfp-previous"]  # still asking
    finally:
        holder.execute("rollback")
        holder.close()
    assert found.known.wait(60)  # the store answers once the writer lets go
    assert found.run_id == first
