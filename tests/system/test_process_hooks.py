"""The tests' process hooks (``tests/support/process_hooks.py``, installed by ``make test``): a
process the tests start holds its collector off while it imports, then has it back over a frozen
heap; a process outside the tests, and the pytest process itself, keep the interpreter's own.

Why a test: the hooks are most of what keeps the suite's hundreds of processes inside CI's time,
and nothing else would notice them gone (every test passes without them, only slower)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import pytest

from support.fixtures import in_ci

STATE = "import gc, json; print(json.dumps([gc.isenabled(), gc.get_freeze_count() > 0]))"


def collector_of(code: str, hooks: str | None) -> list[bool]:
    """What ``code`` prints, run in a new interpreter with ``MFP_TESTS_PROCESS_HOOKS=hooks``."""
    env = {k: v for k, v in os.environ.items() if k != "MFP_TESTS_PROCESS_HOOKS"}
    if hooks is not None:
        env["MFP_TESTS_PROCESS_HOOKS"] = hooks
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return list(json.loads(out.stdout))


@pytest.fixture(scope="module")
def hooks() -> object:
    try:
        import mfp_tests_process_hooks  # type: ignore[import-not-found]
    except ImportError:
        message = "the tests' process hooks are not installed: run `make test-hooks`"
        if in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return mfp_tests_process_hooks


def test_a_process_the_tests_start_imports_with_the_collector_off(hooks: object) -> None:
    assert os.environ.get("MFP_TESTS_PROCESS_HOOKS") == "1"  # conftest turned them on
    assert collector_of(STATE, "1") == [False, False]


def test_after_the_hold_the_collector_is_back_over_a_frozen_heap(hooks: object) -> None:
    waited = (
        "import gc, json, time, mfp_tests_process_hooks as h\n"
        "h._timer.cancel(); h._resume()\n"  # the timer's work, done now
        "cycle = []; cycle.append(cycle); del cycle\n"
        "print(json.dumps([gc.isenabled(), gc.get_freeze_count() > 0, gc.collect() >= 1]))"
    )
    assert collector_of(waited, "1") == [True, True, True]


def test_a_pytest_process_slower_than_the_hold_still_gets_its_collector_back(hooks: object) -> None:
    late = (
        "import gc, json, mfp_tests_process_hooks as h\n"
        "h._timer.cancel(); h._resume()\n"  # the hold over before conftest took it back
        "h.release()\n"
        "print(json.dumps([gc.isenabled(), gc.get_freeze_count() > 0]))"
    )
    assert collector_of(late, "1") == [True, False]


def test_a_process_outside_the_tests_is_not_touched(hooks: object) -> None:
    assert collector_of(STATE, None) == [True, False]
    assert collector_of(STATE, "0") == [True, False]


def test_the_pytest_process_has_its_own_collector(hooks: object) -> None:
    assert gc.isenabled()
