"""Capture cost against ``torch.utils.collect_env.get_env_info()``, in one process.

Both are warmed once (imports done), then timed alternately so machine noise hits both alike.
Also times ``fingerprint --help`` as a whole process, which must import neither torch nor mlflow.

The *first* capture of a process is what a training pays at its start (what a probe caches per
process is not cached yet): ``--first`` fresh processes each import torch and this package, then
time one ``mfp.capture()`` and one ``get_env_info()``, then as many that import MLflow too (as a
decorated training has), then as many that have also loaded the secret detectors (every import
the capture makes done); another fresh process runs each probe alone (first call, in turn) and
the slowest are named. A timed capture in which a probe failed or timed out stops the benchmark:
it did less than its work.

Last, the floor under any capture: the git probe's own ``git status`` process alone, and the
``lstat`` of every tracked file that git (or any check that the tree is unchanged) must make, each
timed alternately with ``get_env_info``. The ratio it prints is the most that a capture which
reads the working tree at call time can reach on this machine, whatever the other probes cost.

    python benchmarks/bench_capture.py [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# In a fresh process: the first capture, then collect_env (imports done before either).
FIRST = """
import json, time
import torch
from torch.utils import collect_env
import mlflow_fingerprint as mfp
from mlflow_fingerprint.capture import core
start = time.perf_counter(); fp = mfp.capture(); ours = time.perf_counter() - start
start = time.perf_counter(); collect_env.get_env_info(); theirs = time.perf_counter() - start
failed = [w for w in ("probe failed", "timed out", "git status failed") if w in fp.to_json()]
print(json.dumps({"ours": ours, "theirs": theirs, "failed": failed}))
"""
# The same in a training's process: MLflow imported too, as by every decorated training (it
# brings ``requests``, which the secret detectors' first load would otherwise import).
FIRST_TRAINING = FIRST.replace("import torch\n", "import torch\nimport mlflow\n")
# The same with every import of the capture done too: the secret detectors (detect-secrets'
# package and the regular expressions its plugins compile as they load) are loaded by a first
# redaction. What is left is the probes' own first work: the "imports done" of issue 27.
FIRST_IMPORTED = FIRST_TRAINING.replace(
    "start = time.perf_counter(); fp = mfp.capture()",
    "from mlflow_fingerprint.redact import redact_text\nredact_text('warm')\n"
    "start = time.perf_counter(); fp = mfp.capture()",
    1,
)
# In a fresh process: each probe's first call, alone, in turn.
PROBES = """
import json, time
import torch
from mlflow_fingerprint.capture import core
ctx = core.make_context()
times = {}
for name, probe in core.PROBES.items():
    start = time.perf_counter(); core._run_probe(name, probe, ctx, {})
    times[name] = time.perf_counter() - start
print(json.dumps(times))
"""


def floor(repeats: int, theirs: Callable[[], object]) -> None:
    """Time what no capture that reads the working tree can skip, against ``theirs``."""
    import os

    from mlflow_fingerprint.capture import git

    repo = git.open_repo(Path.cwd())
    if repo is None:
        print("floor: not run in a git repository")
        return
    listed = subprocess.run(
        ["git", "-C", str(repo.working_tree_dir), "ls-files", "-z"],
        capture_output=True,
        check=True,
    )
    tracked = [repo.working_tree_dir / p for p in listed.stdout.decode().split("\0") if p]

    def status() -> None:
        git._finish_git(git._start_git(repo, git.STATUS_ARGS))

    def stat_all() -> None:
        for path in tracked:
            os.lstat(path)

    status()
    runs: dict[str, list[float]] = {"status": [], "stat": [], "theirs": []}
    for _ in range(repeats):
        runs["status"].append(timed(status))
        runs["stat"].append(timed(stat_all))
        runs["theirs"].append(timed(theirs))
    status_s, stat_s, theirs_s = (statistics.median(runs[k]) for k in ("status", "stat", "theirs"))
    print(
        f"floor: git status alone (the probe's process) median {status_s * 1e3:.1f} ms, "
        f"lstat of the {len(tracked)} tracked files {stat_s * 1e3:.1f} ms, against get_env_info "
        f"{theirs_s * 1e3:.1f} ms: at most {theirs_s / status_s:.0f}x for any capture that "
        f"reads the working tree at call time"
    )


def fresh(code: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if result.pop("failed", None):  # a probe that failed did less than its work: not a timing
        raise SystemExit(f"a probe failed in the timed capture: {result}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--first", type=int, default=3, help="fresh processes for the first capture"
    )
    args = parser.parse_args()

    import torch  # noqa: F401  (imports are done before timing, for both sides)
    from torch.utils import collect_env

    import mlflow_fingerprint as mfp

    mfp.capture()
    collect_env.get_env_info()
    ours, theirs = [], []
    for _ in range(args.repeats):
        ours.append(timed(mfp.capture))
        theirs.append(timed(collect_env.get_env_info))
    ours_median, theirs_median = statistics.median(ours), statistics.median(theirs)

    script = Path(sys.executable).with_name("fingerprint")
    help_runs = [
        timed(lambda: subprocess.run([str(script), "--help"], capture_output=True, check=True))
        for _ in range(5)
    ]
    python_runs = [
        timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True)) for _ in range(5)
    ]

    print(f"mfp.capture()                   median {ours_median * 1e3:8.1f} ms  (n={args.repeats})")
    print(
        f"collect_env.get_env_info()      median {theirs_median * 1e3:8.1f} ms  (n={args.repeats})"
    )
    print(f"speed-up                        {theirs_median / ours_median:8.1f}x  (target >= 30x)")
    for label, code, note in (
        ("first capture of a process      ", FIRST, "target >= 100x"),
        ("first capture, mlflow imported  ", FIRST_TRAINING, "as in a training"),
        ("first capture, every import done", FIRST_IMPORTED, "detectors loaded first"),
    ):
        runs = [fresh(code) for _ in range(args.first)]
        ours_first = statistics.median(f["ours"] for f in runs)
        theirs_first = statistics.median(f["theirs"] for f in runs)
        print(
            f"{label} median {ours_first * 1e3:8.1f} ms  against get_env_info "
            f"{theirs_first * 1e3:.1f} ms: {theirs_first / ours_first:.1f}x "
            f"(n={args.first}; {note})"
        )
    probes = sorted(fresh(PROBES).items(), key=lambda item: -item[1])
    slowest = ", ".join(f"{name} {seconds * 1e3:.1f} ms" for name, seconds in probes[:5])
    print(f"slowest probes, first call alone: {slowest}")
    print(f"fingerprint --help (process)    median {statistics.median(help_runs) * 1e3:8.1f} ms")
    print(f"python -c pass (process)        median {statistics.median(python_runs) * 1e3:8.1f} ms")
    floor(args.repeats, collect_env.get_env_info)


if __name__ == "__main__":
    main()
