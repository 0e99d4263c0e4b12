"""The set-up's install: ``scripts/install.py`` with uv against pip alone, into fresh venvs.

What ``make setup`` waits for is the install of some 170 pinned distributions, torch and
TensorFlow among them, into a new venv. This builds a venv and installs the same requirements
(the Makefile's, under ``constraints.txt``) twice per round, once with uv (``--uv``) and once with
pip (``--uv ""``), each with an empty cache of its own so that both download everything, as a
fresh CI machine does. The rounds alternate the order; medians and the ratio are printed.

    python benchmarks/bench_setup.py [--repeats 1] [--no-tf]

Minutes per round and it needs the package indexes, so ``make bench`` leaves it out.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH = "torch==2.13.0"
TF = "tensorflow-cpu==2.21.0"
UV = "uv==0.13.9"


def install_s(installer: str, requirements: list[str]) -> float:
    """Seconds for a fresh venv's install with ``installer`` (``uv`` or ``pip``), cold caches."""
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        env = {
            **os.environ,
            "UV_CACHE_DIR": str(Path(tmp) / "uv-cache"),
            "PIP_CACHE_DIR": str(Path(tmp) / "pip-cache"),
        }
        command = [python, str(ROOT / "scripts" / "install.py")]
        command += ["--uv", UV if installer == "uv" else ""]
        command += ["--constraint", str(ROOT / "constraints.txt"), "--", *requirements]
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-tf", action="store_true", help="leave TensorFlow out")
    options = parser.parse_args()
    requirements = [TORCH, *([] if options.no_tf else [TF]), "-e", ".[demo,dev]"]
    times: dict[str, list[float]] = {"uv": [], "pip": []}
    for round_ in range(options.repeats):
        order = ("uv", "pip") if round_ % 2 == 0 else ("pip", "uv")
        for installer in order:
            times[installer].append(install_s(installer, requirements))
            print(f"round {round_ + 1}: {installer} {times[installer][-1]:.1f} s", flush=True)
    uv, pip = statistics.median(times["uv"]), statistics.median(times["pip"])
    print(f"install into a fresh venv, cold caches, median of {options.repeats}:")
    print(f"  scripts/install.py with uv  {uv:7.1f} s")
    print(f"  pip alone                   {pip:7.1f} s")
    print(f"  uv / pip                    {uv / pip:7.2f}")


if __name__ == "__main__":
    main()
