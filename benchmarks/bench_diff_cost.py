"""The caller's cost of a dirty git tree: how long a decorated ``train()`` call blocks before its
body starts (capture, the run's creation in the store, its start record on disk; mlflow is
imported before the clock starts) and how much of it is the start capture, with a clean tree and
with large uncommitted diffs; and the longest step of a loop of 10 ms steps while the diff is
read and scanned for secrets off the caller's thread.

Each case runs in a fresh process (nothing imported or cached from the previous one) against a
fresh local sqlite store, in a temporary git repository whose tracked file is rewritten to make
a diff of the given size (lines of code-like text with a few secret-shaped values in them).
Each case is run ``--repeat`` times, interleaved with the others (a loaded machine slows them
alike); the medians and the worst step over all repeats are shown.

    python benchmarks/bench_diff_cost.py [--sizes-mb 0 4 100] [--steps 300] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time, warnings
import mlflow  # imported before the clock starts: its import (seconds) is not the diff's cost
import mlflow_fingerprint as mfp
from mlflow_fingerprint.run import lifecycle

marks = {"capture": 0.0}
capture = lifecycle.capture

def timed_capture(*args, **kwargs):
    start = time.perf_counter()
    try:
        return capture(*args, **kwargs)
    finally:
        marks.setdefault("start_capture", time.perf_counter() - start)

lifecycle.capture = timed_capture

@mfp.fingerprinted(experiment="bench-diff", seed=0)
def train(steps):
    marks["body"] = time.perf_counter()
    worst = 0.0
    last = time.perf_counter()
    for step in range(steps):
        time.sleep(0.01)
        now = time.perf_counter()
        worst = max(worst, now - last)
        last = now
        mfp.log_metrics({"loss": 1.0 / (step + 1)}, step=step)
    marks["worst_step"] = worst
    return {"val_error": 0.1}

warnings.simplefilter("ignore")
t_train = time.perf_counter()
train(int(sys.argv[1]))
print(json.dumps({
    "blocking_s": marks["body"] - t_train,
    "capture_s": marks["start_capture"],
    "worst_step_s": marks["worst_step"],
}))
"""


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def make_repo(root: Path, size_mb: float) -> Path:
    """A repository with one tracked file, rewritten to make a diff of about ``size_mb``."""
    repo = root / f"repo-{size_mb:g}"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    code = repo / "train.py"
    code.write_text("lr = 0.1\n")
    git(repo, "add", "train.py")
    git(repo, "commit", "-q", "-m", "first")
    if size_mb > 0:
        line = "    loss = model(batch_{i}) * weight_decay + torch.randn(3, 4).sum()  # step {i}\n"
        secret = "DB_PASSWORD = 'hunter2-{i}'\n"
        lines, size, i = ["lr = 0.2\n"], 0, 0
        while size < size_mb * 1e6:
            text = secret.format(i=i) if i % 5000 == 0 else line.format(i=i)
            lines.append(text)
            size += len(text)
            i += 1
        code.write_text("".join(lines))
    return repo


def make_store(store: Path) -> None:
    """Create the sqlite store's tables first: a fresh store's migrations take seconds, the same
    for every case, and are not what is measured."""
    from mlflow.tracking import MlflowClient

    MlflowClient(f"sqlite:///{store}").search_experiments()


def run_case(repo: Path, steps: int, store: Path) -> dict[str, float]:
    src = Path(__file__).resolve().parents[1] / "src"
    env = {
        **os.environ,
        "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "MLFLOW_TRACKING_URI": f"sqlite:///{store}",
        "MLFLOW_FINGERPRINT_SPOOL": str(store.parent / "spool"),
    }
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(steps)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes-mb", type=float, nargs="+", default=[0, 4, 100])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repos = {size: make_repo(root, size) for size in args.sizes_mb}
        results: dict[float, list[dict[str, float]]] = {size: [] for size in args.sizes_mb}
        for i in range(args.repeat):
            for size, repo in repos.items():
                store = root / f"store-{size:g}-{i}.db"
                make_store(store)
                results[size].append(run_case(repo, args.steps, store))
        head = ("diff", "blocking before train()", "of it, capture", "worst step")
        print(f"{head[0]:>8}  {head[1]:>24}  {head[2]:>15}  {head[3]:>11}")
        for size, runs in results.items():
            label = "clean" if size == 0 else f"{size:g} MB"
            blocking = statistics.median(r["blocking_s"] for r in runs)
            capture = statistics.median(r["capture_s"] for r in runs)
            worst = max(r["worst_step_s"] for r in runs)
            print(f"{label:>8}  {blocking:>22.3f} s  {capture:>13.3f} s  {worst:>9.3f} s")


if __name__ == "__main__":
    main()
