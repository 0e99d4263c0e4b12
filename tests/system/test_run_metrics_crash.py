"""Values spooled by a process that then crashed are uploaded by ``fingerprint sync``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from mlflow.tracking import MlflowClient

from mlflow_fingerprint import layout
from mlflow_fingerprint.cli.main import main as cli


def test_values_spooled_before_a_crash_are_uploaded_by_sync(
    sqlite_tracking_uri: str, spool_dir: Path, tmp_path: Path
) -> None:
    code = textwrap.dedent("""
        import os, signal, time
        import mlflow_fingerprint as mfp

        @mfp.fingerprinted(experiment="crash", run_name="crash", seed=0)
        def train():
            for step in range(1000):
                mfp.log_metrics({"loss": step * 0.5}, step=step)
            time.sleep(1.0)  # the spool thread writes the values to disk meanwhile
            os.kill(os.getpid(), signal.SIGKILL)  # no atexit, no flush: a real crash

        train()
    """)
    # The training process never reaches the server: everything it logged must come from disk.
    env = {**os.environ, "MLFLOW_TRACKING_URI": "http://127.0.0.1:9"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,
        timeout=180,
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == -9, done.stderr
    assert cli(["sync", "--tracking-uri", sqlite_tracking_uri]) == 0
    client = MlflowClient()
    [run] = client.search_runs([client.get_experiment_by_name("crash").experiment_id])
    history = client.get_metric_history(run.info.run_id, "loss")
    assert sorted(m.step for m in history) == list(range(1000))
    assert run.data.tags[layout.TAG_SEED] == "0"
    # Its process is dead, so sync ends it, as KILLED (never FINISHED) at its last value's time.
    assert run.info.status == "KILLED"
    assert run.data.tags[layout.INTERNAL_ENDED_BY] == "sync"
    assert run.info.end_time == max(m.timestamp for m in history)
