"""Target of the SIGKILL durability test: ``python sigkill_logger.py URI SPOOL OUT N SEED``.

Imports once (MLflow and the writer's client too, as a training has by the time its run starts:
a child that imported them itself would take seconds before its first value), then for each of N
trainings forks a child that opens a run's writer (as the decorator does), stays quiet for a
while (capture, data loading), then logs one value every 10 ms; the parent SIGKILLs it at a
random moment of that logging. Four children run at a time.

The ground truth a test needs survives the kill: before each ``log_metrics`` call the child
writes ``step time`` to ``OUT/child-K.log`` with one unbuffered ``os.write`` (the page cache
outlives a killed process), and the parent writes each kill's time to ``OUT/kills.json``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path

from mlflow_fingerprint import layout
from mlflow_fingerprint.tracking import client as _mlflow_io  # noqa: F401  (imports MLflow)
from mlflow_fingerprint.tracking.events import CreateRun
from mlflow_fingerprint.tracking.spool import Spool
from mlflow_fingerprint.tracking.uploader import RunWriter, now_ms

QUIET_S = 1.2  # longer than any back-off a timer-driven writer would reach before logging
EXPERIMENT = "sigkill"


def child(uri: str, root: Path, out: Path, index: int) -> None:
    spool = Spool.create(root)
    writer = RunWriter(spool, uri).start()
    tags = {layout.INTERNAL_SPOOL_ID: spool.spool_id}
    writer.record(CreateRun(spool.spool_id, now_ms(), EXPERIMENT, None, f"kill-{index}", tags, uri))
    fd = os.open(out / f"child-{index}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, b"ready\n")
    time.sleep(QUIET_S)
    step = 0
    while True:
        now = time.time()
        os.write(fd, f"{step} {now!r}\n".encode())
        writer.log_metrics({"t": now}, step)
        step += 1
        time.sleep(0.01)


def wait_ready(path: Path) -> None:
    while not (path.exists() and path.read_bytes().startswith(b"ready")):
        time.sleep(0.005)


def main() -> int:
    uri, root, out, count, seed = sys.argv[1:6]
    out_dir, spool_root = Path(out), Path(root)
    rng = random.Random(int(seed))
    kills: dict[str, float] = {}
    pending = list(range(int(count)))
    while pending:
        batch, pending = pending[:4], pending[4:]
        started: dict[int, tuple[int, float]] = {}
        for index in batch:
            pid = os.fork()
            if pid == 0:
                try:
                    child(uri, spool_root, out_dir, index)
                finally:
                    os._exit(1)
            wait_ready(out_dir / f"child-{index}.log")
            # a random moment of the logging: from just after the quiet spell to 0.8 s into it
            started[index] = (pid, time.time() + QUIET_S + rng.uniform(0.02, 0.8))
        for index, (pid, at) in sorted(started.items(), key=lambda item: item[1][1]):
            time.sleep(max(0.0, at - time.time()))
            kills[str(index)] = time.time()
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    (out_dir / "kills.json").write_text(json.dumps(kills))
    return 0


if __name__ == "__main__":
    sys.exit(main())
