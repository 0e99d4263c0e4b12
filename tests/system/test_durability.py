"""Nothing logged is lost to a SIGKILL: ``log_metrics`` wakes the spool thread, so a value is on
disk within the writer's stated bound (``uploader.INTERVAL_S`` plus one fsync'd write), and
``fingerprint sync`` then puts each such value into MLflow exactly once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from mlflow.tracking import MlflowClient

from mlflow_fingerprint.cli.main import main as cli
from mlflow_fingerprint.tracking.uploader import INTERVAL_S
from support.paths import JOBS, ROOT

KILLS = 20
# The stated bound is INTERVAL_S plus the one write; this machine's fsync and scheduler (two
# cores shared by several test runs) get 150 ms of that write's share.
BOUND_S = INTERVAL_S + 0.15


def logged(path: Path) -> dict[int, float]:
    """step -> time of the call, for each ``log_metrics`` the child began."""
    lines = path.read_text().splitlines()[1:]
    pairs = [line.split() for line in lines if line.count(" ") == 1]
    return {int(step): float(when) for step, when in pairs}


def test_every_value_logged_before_the_bound_survives_sigkill(
    mlflow_server: str, spool_dir: Path, tmp_path: Path, restore_environ: None
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    subprocess.run(
        [
            sys.executable,
            str(JOBS / "sigkill_logger.py"),
            mlflow_server,
            str(spool_dir),
            str(out),
            str(KILLS),
            "14",
        ],
        env=env,
        check=True,
        timeout=120,
    )
    kills = {int(k): v for k, v in json.loads((out / "kills.json").read_text()).items()}
    assert cli(["sync"]) == 0

    client = MlflowClient(mlflow_server)
    experiment = client.get_experiment_by_name("sigkill")
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    problems: list[str] = []
    required_total = 0
    for index, killed_at in kills.items():
        calls = logged(out / f"child-{index}.log")
        required = {step for step, when in calls.items() if when < killed_at - BOUND_S}
        required_total += len(required)
        run = runs.get(f"kill-{index}")
        if run is None:
            problems.append(f"kill-{index}: no run")
            continue
        stored = Counter((m.step, m.value) for m in client.get_metric_history(run.info.run_id, "t"))
        missing = sorted(s for s in required if stored[(s, calls[s])] == 0)
        doubled = sorted(s for (s, _), n in stored.items() if n > 1)
        unknown = sorted(s for (s, v) in stored if calls.get(s) != v)
        if missing or doubled or unknown:
            problems.append(
                f"kill-{index}: missing {missing[:5]} ({len(missing)}), twice {doubled[:5]}, "
                f"never logged {unknown[:5]}"
            )
        assert run.info.status == "KILLED"
    assert not problems, problems
    assert required_total > 10 * KILLS  # the kills did land in the logging, not before it
