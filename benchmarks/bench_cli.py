"""CLI start-up cost: ``fingerprint --help`` as a whole process against ``python -c pass``.

A user pays interpreter start plus our imports for every command, and ``--help`` or a typo
should feel instant, so what ``import mlflow_fingerprint`` and the CLI's parser import is the
cost measured here. The commands run in turn, ``--repeats`` rounds, so whatever else the machine
does slows each alike; medians are reported, and the ratio to ``python -c pass``; a bare
``argparse`` help is the floor a parser-based CLI cannot go under. Also reported:
``import mlflow_fingerprint`` as ``python -X importtime`` accounts it (cumulative, median) and how
many modules of this package and of the heavy dependencies each start imports.

    python benchmarks/bench_cli.py [--repeats 30] [--mlflow]

``--mlflow`` also times ``mlflow --help`` (slow: it imports mlflow) for scale. Exit status 1 if
``fingerprint --help`` imports torch, mlflow or numpy, or takes more than ``--limit`` times
``python -c pass`` (default 4: on a loaded 2-core machine it measured 11.8 when the package
imported everything eagerly, 2.8 with lazy imports, against 2.2 for a bare argparse help).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
HEAVY = ("torch", "mlflow", "numpy", "git", "pynvml", "rich")
# Runs SETUP, then prints what it imported (this package's modules, the heavy ones) as JSON.
PROBE = f"""import json, sys
SETUP
ours = sorted(m for m in sys.modules if m.split(".")[0] == "mlflow_fingerprint")
heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)
print(json.dumps({{"ours": ours, "heavy": heavy}}), file=sys.stderr)
"""
STARTS = {
    "import mlflow_fingerprint": "import mlflow_fingerprint",
    "fingerprint --help": "from mlflow_fingerprint.cli.main import main\n"
    "try:\n    main(['--help'])\nexcept SystemExit:\n    pass",
}


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=True)
    return time.perf_counter() - start


def import_ms(statement: str) -> float:
    """``mlflow_fingerprint``'s cumulative import time as ``-X importtime`` reports it."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in out.stderr.splitlines():
        fields = [f.strip() for f in line.removeprefix("import time:").split("|")]
        if len(fields) == 3 and fields[2] == "mlflow_fingerprint":
            return int(fields[1]) / 1e3
    raise RuntimeError(f"no import of mlflow_fingerprint in:\n{out.stderr[-2000:]}")


def imported(setup: str) -> dict[str, list[str]]:
    """The package's modules and the heavy dependencies a start leaves in ``sys.modules``."""
    code = PROBE.replace("SETUP", setup)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stderr.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument(
        "--limit", type=float, default=4.0, help="most `fingerprint --help` may take, in x pass"
    )
    parser.add_argument("--mlflow", action="store_true", help="also time `mlflow --help`")
    args = parser.parse_args()

    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import mlflow_fingerprint'": [
            sys.executable,
            "-c",
            "import mlflow_fingerprint",
        ],
        "python -c <argparse help> (the floor)": [
            sys.executable,
            "-c",
            "import argparse; argparse.ArgumentParser().print_help()",
        ],
        "fingerprint --help": [str(BIN / "fingerprint"), "--help"],
    }
    if args.mlflow:
        commands["mlflow --help"] = [str(BIN / "mlflow"), "--help"]
    for cmd in commands.values():  # warm the page cache and .pyc files before timing
        timed(cmd)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.repeats):
        for name, cmd in commands.items():
            times[name].append(timed(cmd))
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    base = medians["python -c pass"]
    imports = sorted(import_ms("import mlflow_fingerprint") for _ in range(min(args.repeats, 15)))

    print(f"process wall time, median of {args.repeats} (commands alternating):")
    for name, median in medians.items():
        print(f"  {name:42s} {median * 1e3:8.1f} ms  {median / base:5.2f}x python -c pass")
    print(
        f"import mlflow_fingerprint (-X importtime, cumulative): median "
        f"{statistics.median(imports):.1f} ms (min {imports[0]:.1f}, max {imports[-1]:.1f})"
    )
    seen = {label: imported(setup) for label, setup in STARTS.items()}
    for label, modules in seen.items():
        print(
            f"{label}: {len(modules['ours'])} mlflow_fingerprint modules, "
            f"heavy: {', '.join(modules['heavy']) or 'none'}"
        )

    failed = []
    forbidden = sorted({"torch", "mlflow", "numpy"} & set(seen["fingerprint --help"]["heavy"]))
    if forbidden:
        failed.append(f"fingerprint --help imports {', '.join(forbidden)}")
    ratio = medians["fingerprint --help"] / base
    if ratio > args.limit:
        failed.append(f"fingerprint --help takes {ratio:.2f}x python -c pass (limit {args.limit}x)")
    for problem in failed:
        print(f"FAIL: {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
