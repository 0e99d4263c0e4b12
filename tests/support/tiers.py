"""The two test tiers follow the folders, and the unit tier is held to what it promises.

- ``tests/system``: real trainings, ``mlflow server`` and other processes, browsers. Every test
  there is marked ``slow`` by its folder (``pytest -m "not slow"`` and ``make test-fast`` leave
  them out); nobody marks a test by hand.
- ``tests/unit``: logic, real files, real sqlite stores, real git. A unit test fails (an error at
  its teardown, saying why) when it trains (a torch optimizer step), starts a process other than
  git and the capture's own probes (``nvcc``, ``uname``), ``mlflow server`` included, or forks, or
  listens on a socket (a server of its own), or takes more than ``--unit-limit`` seconds (5 by
  default) from its setup to its teardown (less what session-wide fixtures took to set up; on a
  machine loaded by other work, the limit stretches with the load).

Why a check and not a convention: the tier's promise (the whole of it in about two minutes, with
nothing to start) was broken one convenient test at a time, and a marker set by hand disagreed
with the folders within a round.

The process starts are seen through Python's audit hooks (``subprocess.Popen``, ``os.fork``,
``os.system``, ``os.posix_spawn``), a server through ``socket.socket.listen`` (wrapped for the
session: there is no audit event for it), the training through torch's global optimizer-step
hook, installed as soon as ``torch.optim`` is imported. A test of the check itself
opens its own ``Watch`` (:meth:`TierGuard.watching`): events go to the innermost watch only.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

Tier = Literal["unit", "system"]
TIERS: tuple[Tier, ...] = ("unit", "system")
UNIT_LIMIT_S = 5.0
WAITED = 4.0  # the stretch for a test that spent its time waiting for a core (Watch.problems)
# git for the unit tier's real repositories; nvcc and uname are what a capture itself runs (the
# toolkit's version, ``platform.processor()``), for milliseconds, time-bounded.
ALLOWED_PROGRAMS = frozenset({"git", "nvcc", "uname"})
ALLOWED = ", ".join(sorted(ALLOWED_PROGRAMS))
# Imported before the first unit test (a missing one is skipped: torch is an optional extra).
WARM = ("torch", "torch._dynamo", "mlflow", "mlflow.tracking")
NAME = "tiers"


def tier_of(path: Path) -> Tier | None:
    """``unit`` or ``system`` for a test file under ``tests/unit`` or ``tests/system``."""
    parts = path.parts
    for i, part in enumerate(parts[:-1]):
        if part == "tests" and parts[i + 1] in TIERS:
            return parts[i + 1]  # type: ignore[return-value]
    return None


def _program(executable: Any, args: Any) -> str:
    """The name of the program a process start runs (``git``, ``python3.11``, ``mlflow``)."""
    if executable:
        return Path(os.fsdecode(executable)).name
    if isinstance(args, str | bytes):
        first = os.fsdecode(args).split()[0] if args.strip() else ""
    elif args:
        first = os.fsdecode(next(iter(args)))
    else:
        first = ""
    return Path(first).name


@dataclass
class Watch:
    """What one unit test did that the tier does not allow, and how long it took."""

    limit_s: float
    found: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    # CPU time of the test's own thread: what the test cost, whatever else the machine ran
    cpu_started: float = field(default_factory=time.thread_time)
    session_s: float = 0.0  # spent setting up session-wide fixtures: the session's time, not ours
    session_cpu_s: float = 0.0
    ended: float | None = None  # set where the session's own teardown follows (the last test)

    def note(self, what: str) -> None:
        if what not in self.found:
            self.found.append(what)

    def problems(
        self, elapsed_s: float | None = None, load: float | None = None, cpu_s: float | None = None
    ) -> list[str]:
        """What the test did that the tier does not allow. ``elapsed_s`` defaults to the time
        since it began, less what session-wide fixtures took; the limit holds on a machine to
        itself, and stretches with the machine's load (``load``: runnable processes per core,
        default the last minute's), so that other people's work on a shared machine does not
        fail a test that takes two seconds alone. The last minute's load lags a worker that has
        just started training beside this one: a test whose own thread used under half the
        limit in CPU (``cpu_s``) was kept waiting by others' work, and is allowed up to
        ``WAITED`` times the time (a test 10 times slower than alone was seen so)."""
        if elapsed_s is None:
            ended = time.monotonic() if self.ended is None else self.ended
            elapsed_s = ended - self.started - self.session_s
        if cpu_s is None:
            cpu_s = time.thread_time() - self.cpu_started - self.session_cpu_s
        stretch = max(1.0, machine_load() if load is None else load)
        if cpu_s < self.limit_s / 2:
            stretch = max(stretch, WAITED)
        allowed = self.limit_s * stretch
        if elapsed_s <= allowed:
            return list(self.found)
        at = f"; {allowed:.0f} s at this load" if stretch > 1.0 else ""
        late = f"took {elapsed_s:.1f} s (the unit tier allows {self.limit_s:g} s a test{at})"
        return [*self.found, late]


def machine_load() -> float:
    """Runnable processes per core over the last minute (1.0: every core busy)."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        return 1.0


class TierGuard:
    """The pytest plugin: marks ``tests/system`` slow, and watches each ``tests/unit`` test."""

    def __init__(
        self, limit_s: float, report: Path | None = None, load: float | None = None
    ) -> None:
        self.limit_s = limit_s
        self.load = load  # --unit-load: the machine's load taken as given, not measured
        self.report = report  # --tier-report: every test's tier, time and what it started
        self._stack: list[Watch] = []
        self._watches: dict[str, Watch] = {}
        self._torch_hooked = False
        sys.addaudithook(self._audit)  # cannot be removed: it does nothing while no watch is open
        self._hook_torch()
        self._hook_listen()

    # -- what a watch sees --------------------------------------------------------------------

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "import":
            if not self._torch_hooked:
                self._hook_torch()
            return
        if not self._stack:
            return
        watch = self._stack[-1]
        if event in ("subprocess.Popen", "os.posix_spawn"):
            program = _program(args[0], args[1])
            if program not in ALLOWED_PROGRAMS:
                watch.note(f"started a process: {program} (the unit tier allows {ALLOWED})")
        elif event in ("os.system", "os.spawn"):
            watch.note(f"started a process: {event}{args!r:.80}")
        elif event in ("os.fork", "os.forkpty"):
            watch.note("forked a process (DataLoader workers, multiprocessing)")

    def _hook_torch(self) -> None:
        """Count optimizer steps from the moment torch.optim exists (never importing it)."""
        module = sys.modules.get("torch.optim.optimizer")
        register = getattr(module, "register_optimizer_step_pre_hook", None)
        if register is None:
            return
        self._torch_hooked = True
        register(self._optimizer_step)

    def _optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self._stack:
            self._stack[-1].note(f"trained: {type(optimizer).__name__}.step()")

    def _hook_listen(self) -> None:
        """Wrap ``socket.socket.listen``: a socket that listens is a server."""
        listen = socket.socket.listen
        stack = self._stack

        def listening(sock: socket.socket, *args: Any) -> None:
            if stack:
                where = sock.getsockname()
                stack[-1].note(f"listened on {where!r}: a server belongs in tests/system")
            listen(sock, *args)

        socket.socket.listen = listening  # type: ignore[method-assign]

    @contextlib.contextmanager
    def watching(self, limit_s: float) -> Iterator[Watch]:
        """A watch of its own for the duration of the block (the check's own tests)."""
        watch = Watch(limit_s)
        self._stack.append(watch)
        try:
            yield watch
        finally:
            self._stack.remove(watch)

    # -- pytest hooks -------------------------------------------------------------------------

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            tier = tier_of(Path(str(item.path)))
            if tier == "system":
                item.add_marker(pytest.mark.slow)
            elif tier is None:
                item.add_marker(pytest.mark.tier_missing)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any]) -> Iterator[None]:
        """A session-wide fixture (the MLflow database template every sqlite store is copied
        from) is set up once, in whichever test first asks for it: its time is not that test's
        (what it does is still watched)."""
        began, began_cpu = time.monotonic(), time.thread_time()
        yield
        if fixturedef.scope == "session" and self._stack:
            self._stack[-1].session_s += time.monotonic() - began
            self._stack[-1].session_cpu_s += time.thread_time() - began_cpu

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Import the heavy libraries once, before the first unit test: the second or so each
        costs on first import (torch, the compiler torch's optimizers load, MLflow) is the
        session's, not that of whichever test happens to come first."""
        if not any(tier_of(Path(str(item.path))) == "unit" for item in session.items):
            return
        for name in WARM:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if item.get_closest_marker("tier_missing") is not None:
            pytest.fail(f"{item.path}: a test lives under tests/unit or tests/system")
        if tier_of(Path(str(item.path))) == "unit" or self.report is not None:
            watch = Watch(self.limit_s)
            self._watches[item.nodeid] = watch
            self._stack.append(watch)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        """The last test's teardown also ends the session's fixtures (a team server's PostgreSQL,
        stopped with ``pg_ctl``; with pytest-xdist a unit test is often a worker's last): that is
        the session's work, neither watched nor timed as the test's."""
        watch = self._watches.get(item.nodeid)
        if nextitem is None and watch is not None:
            watch.ended = time.monotonic()
            if watch in self._stack:
                self._stack.remove(watch)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        outcome = yield
        if call.when != "teardown":
            return
        watch = self._watches.pop(item.nodeid, None)
        if watch is None:
            return
        if watch in self._stack:
            self._stack.remove(watch)
        report = outcome.get_result()
        tier = tier_of(Path(str(item.path)))
        if self.report is not None:
            self._write(item.nodeid, tier, watch)
        problems = watch.problems(load=self.load)
        if tier == "unit" and problems and report.passed:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid} is in tests/unit but it "
                + "; ".join(problems)
                + ". Make it cheaper, or move it to tests/system (see tests/support/tiers.py)."
            )

    def _write(self, nodeid: str, tier: Tier | None, watch: Watch) -> None:
        """One line of the report: where a test is, how long it took, what it started."""
        seconds = time.monotonic() - watch.started - watch.session_s
        line = {"test": nodeid, "tier": tier, "seconds": round(seconds, 2), "did": watch.found}
        assert self.report is not None
        with self.report.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--unit-limit",
        type=float,
        default=UNIT_LIMIT_S,
        help="seconds a tests/unit test may take, setup to teardown (default %(default)s; "
        "raise it under coverage or a profiler)",
    )
    parser.addoption(
        "--unit-load",
        type=float,
        default=None,
        help="runnable processes per core to stretch --unit-limit by (default: the machine's "
        "load over the last minute; 1 holds every unit test to the limit as it is)",
    )
    parser.addoption(
        "--tier-report",
        default=None,
        help="append one JSON line per test (tier, seconds, processes started, training) to this "
        "file, system tests included: to find a system test that belongs in tests/unit",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: under tests/system (set by the folder, not by hand)")
    config.addinivalue_line("markers", "tier_missing: a test outside tests/unit and tests/system")
    report = config.getoption("--tier-report")
    guard = TierGuard(
        config.getoption("--unit-limit"),
        Path(report) if report else None,
        config.getoption("--unit-load"),
    )
    config.pluginmanager.register(guard, NAME)
