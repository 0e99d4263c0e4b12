"""Target of the parallel-sweep test: ``python sweep_job.py OUT STEPS NAME:COUNT:URI ...``.

A sweep (a Hydra multirun, a job array, a shell loop with ``&``) is many processes running the
same decorated training against one store. For each ``NAME:COUNT:URI`` in turn, this imports
mlflow and the package once, forks COUNT children, waits until each is ready, and releases them
together by creating ``OUT/NAME/go`` (the barrier): every child then opens the store for the
first time at the same moment, which is what forces MLflow's first-use race on a new sqlite file.
Forking after the imports keeps the test cheap (each child would spend seconds importing); what
races, opening and migrating the store, happens in each child after the fork.

torch is made unimportable: a decorated plain-Python training needs none. Each child writes
``OUT/NAME/child-I.json``: the run active inside ``train()`` (``mlflow.active_run()``), the
slowest ``log_metrics`` call as the training saw it, and any exception.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

sys.modules["torch"] = None  # type: ignore[assignment]  # a training without torch

import mlflow  # noqa: E402
import mlflow.store.tracking.sqlalchemy_store  # noqa: E402  # each child would import it

import mlflow_fingerprint as mfp  # noqa: E402

EXPERIMENT_PREFIX = "sweep-"


def value(index: int, step: int, steps: int) -> float:
    """What child ``index`` logs at ``step``: distinct per child and step, exact in a float."""
    return index + step / steps


def child(folder: Path, index: int, uri: str, steps: int, name: str) -> None:
    os.environ["MLFLOW_TRACKING_URI"] = uri
    os.environ["MLFLOW_FINGERPRINT_SPOOL"] = str(folder / "spool")
    mlflow.set_tracking_uri(uri)
    seen: dict[str, object] = {"index": index}
    (folder / f"ready-{index}").touch()
    barrier = folder / "go"
    while not barrier.exists():
        time.sleep(0.002)

    @mfp.fingerprinted(experiment=EXPERIMENT_PREFIX + name, run_name=f"child-{index}", quiet=True)
    def train() -> None:
        active = mlflow.active_run()
        seen["active"] = active.info.run_id if active is not None else None
        worst = (0.0, 0.0)  # (wall, this thread's CPU) of the slowest call
        for step in range(steps):
            started, cpu = time.perf_counter(), time.thread_time()
            mfp.log_metrics({"loss": value(index, step, steps)}, step=step)
            took = time.perf_counter() - started
            if took > worst[0]:
                worst = (took, time.thread_time() - cpu)
        seen["slowest_step_s"], seen["slowest_step_cpu_s"] = worst

    try:
        train()
    except BaseException:
        seen["error"] = traceback.format_exc()
    (folder / f"child-{index}.json").write_text(json.dumps(seen))


def sweep(out: Path, steps: int, spec: str) -> None:
    name, count, uri = spec.split(":", 2)
    folder = out / name
    folder.mkdir(parents=True)
    pids = []
    for index in range(int(count)):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                child(folder, index, uri, steps, name)
                code = 0
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        pids.append(pid)
    deadline = time.monotonic() + 60
    while len(list(folder.glob("ready-*"))) < len(pids) and time.monotonic() < deadline:
        time.sleep(0.01)
    (folder / "go").touch()  # release them together
    released = time.monotonic()
    for pid in pids:
        os.waitpid(pid, 0)
    print(f"{name}: {count} trainings done {time.monotonic() - released:.1f} s after the barrier")


def main() -> None:
    out, steps = Path(sys.argv[1]), int(sys.argv[2])
    for spec in sys.argv[3:]:
        sweep(out, steps, spec)


if __name__ == "__main__":
    main()
