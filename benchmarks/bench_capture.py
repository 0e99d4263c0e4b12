"""Capture cost against ``torch.utils.collect_env.get_env_info()``, in one process.

Both are warmed once (imports done), then timed alternately so machine noise hits both alike.
Also times ``fingerprint --help`` as a whole process, which must import neither torch nor mlflow.

    python benchmarks/bench_capture.py [--repeats N]
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
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
    print(f"fingerprint --help (process)    median {statistics.median(help_runs) * 1e3:8.1f} ms")
    print(f"python -c pass (process)        median {statistics.median(python_runs) * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
