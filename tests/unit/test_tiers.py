"""The unit tier holds to its promise: the check in ``support/tiers.py`` sees a test that trains,
starts a process other than git, forks, starts a server of its own or runs past its time limit,
and turns that into a failure of the test; the folder, not a hand-set marker, makes a test slow.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from support.tiers import NAME, TierGuard, tier_of


@pytest.fixture
def guard(request: pytest.FixtureRequest) -> TierGuard:
    plugin = request.config.pluginmanager.get_plugin(NAME)
    assert isinstance(plugin, TierGuard)
    return plugin


def test_the_folder_is_the_tier() -> None:
    assert tier_of(Path("/repo/tests/unit/compare/test_x.py")) == "unit"
    assert tier_of(Path("/repo/tests/system/test_y.py")) == "system"
    assert tier_of(Path("/repo/tests/support/test_z.py")) is None
    assert tier_of(Path("/repo/tests/test_w.py")) is None


def test_the_marker_follows_the_folder(request: pytest.FixtureRequest) -> None:
    ours = request.node
    assert ours.get_closest_marker("slow") is None
    system = [i for i in request.session.items if tier_of(Path(str(i.path))) == "system"]
    assert all(i.get_closest_marker("slow") is not None for i in system)


def test_git_is_allowed_and_any_other_program_is_seen(guard: TierGuard) -> None:
    with guard.watching(60.0) as watch:
        subprocess.run(["git", "--version"], capture_output=True, check=True)
        assert watch.found == []
        subprocess.run([shutil.which("true") or "true"], check=True)
    assert watch.found == ["started a process: true (the unit tier allows git, nvcc, uname)"]


def test_a_fork_is_seen(guard: TierGuard) -> None:
    with guard.watching(60.0) as watch:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    assert watch.found == ["forked a process (DataLoader workers, multiprocessing)"]


def test_a_listening_socket_is_seen_and_a_bound_one_is_not(guard: TierGuard) -> None:
    """urllib3 binds a socket to ask whether IPv6 works: that is no server; listening is."""
    with guard.watching(60.0) as watch, socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        assert watch.found == []
        sock.listen()
        port = sock.getsockname()[1]
    assert watch.found == [f"listened on ('127.0.0.1', {port}): a server belongs in tests/system"]


def test_an_optimizer_step_is_training(guard: TierGuard) -> None:
    import torch

    weight = torch.nn.Parameter(torch.ones(2))
    optimizer = torch.optim.SGD([weight], lr=0.1)
    weight.sum().backward()
    with guard.watching(60.0) as watch:
        assert watch.found == []
        optimizer.step()
    assert watch.found == ["trained: SGD.step()"]


def test_time_past_the_limit_is_a_problem(guard: TierGuard) -> None:
    with guard.watching(0.05) as watch:
        assert watch.problems(load=1.0) == []
        time.sleep(0.1)
    (late,) = watch.problems(load=1.0, cpu_s=0.1)
    # 0.1 s asleep, or more where the machine is loaded: the wall clock's time
    assert re.match(r"took \d+\.\d s \(the unit tier allows 0\.05 s a test\)", late), late
    # asleep, its thread used no CPU: kept waiting, up to WAITED times the limit
    assert watch.problems(load=1.0) == []
    (late,) = watch.problems(elapsed_s=0.25, load=1.0)
    assert late.startswith("took 0.2 s (the unit tier allows 0.05 s a test; 0 s at this load)")


def test_the_limit_stretches_with_the_load_of_a_shared_machine(guard: TierGuard) -> None:
    with guard.watching(5.0) as watch:
        pass
    assert watch.problems(elapsed_s=6.0, load=0.5, cpu_s=6.0) == [
        "took 6.0 s (the unit tier allows 5 s a test)"
    ]
    assert watch.problems(elapsed_s=6.0, load=2.0, cpu_s=6.0) == []  # 2 runnable per core
    assert watch.problems(elapsed_s=12.0, load=2.0, cpu_s=6.0) == [
        "took 12.0 s (the unit tier allows 5 s a test; 10 s at this load)"
    ]
    # a test whose thread used 0.8 s of CPU took 8 s beside a training that had just started
    # (the minute's load still low): it waited, it did not cost
    assert watch.problems(elapsed_s=8.2, load=0.5, cpu_s=0.8) == []
    assert watch.problems(elapsed_s=21.0, load=0.5, cpu_s=0.8) == [
        "took 21.0 s (the unit tier allows 5 s a test; 20 s at this load)"
    ]


def test_a_slow_unit_test_fails_and_says_where_it_belongs(pytester: pytest.Pytester) -> None:
    """The whole path, in a session of its own: a unit test over the limit fails at its teardown
    and says why; the same tests under tests/system are marked slow by their folder."""
    pytester.makeconftest('pytest_plugins = ["support.tiers"]')
    body = (  # a test that computes for 0.3 s of its own thread's CPU
        "import time\n\ndef test_sleeps():\n    end = time.thread_time() + 0.3\n"
        "    while time.thread_time() < end:\n        pass\n\ndef test_quick():\n    pass\n"
    )
    for tier in ("unit", "system"):
        (pytester.path / "tests" / tier).mkdir(parents=True)
        (pytester.path / "tests" / tier / f"test_{tier}.py").write_text(body)
    shutil.move(pytester.path / "conftest.py", pytester.path / "tests" / "conftest.py")
    result = pytester.runpytest_inprocess(
        "tests",
        "-p",
        "no:cacheprovider",
        "--unit-limit",
        "0.2",
        "--unit-load",
        "1",
        "-m",
        "not slow",
    )
    result.assert_outcomes(passed=2, errors=1, deselected=2)
    # the time it took is the wall clock's: 0.3 s of CPU, and more on a loaded machine
    result.stdout.fnmatch_lines(
        [
            "*tests/unit/test_unit.py::test_sleeps is in tests/unit but it took * s "
            "(the unit tier allows 0.2 s a test)*tests/system*"
        ]
    )
