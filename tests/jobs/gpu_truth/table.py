"""Print the README's table of what was measured on a real GPU, from the fixtures.

    python tests/jobs/gpu_truth/table.py [--machine h100]

For each pair of ``record.py``'s PAIRS and each model: the relative difference of the loss at
step 0 and at the last step, and the first step where the curves part; then the cost of
deterministic mode and of cuDNN autotuning on a 300-step training.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from record import MODELS, PAIRS  # noqa: E402  (the scenarios are record.py's)

FIXTURES = HERE.parents[1] / "fixtures" / "gpu_runs"


def curve(run: dict) -> list[float]:
    return [value for _step, value, _t in sorted(run["metrics"]["loss"])]


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def first_part(a: list[float], b: list[float]) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y), None)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--machine", default="h100")
    machine = p.parse_args().machine
    with gzip.open(FIXTURES / f"{machine}.json.gz", "rt") as f:
        runs = {r["key"]: r for r in json.load(f)["runs"]}
    measured = json.loads((FIXTURES / f"{machine}_measured.json").read_text())
    print("| scenario | model | loss rel. diff, step 0 | at step 299 | curves part at |")
    print("|---|---|---|---|---|")
    for a, b, what in PAIRS:
        for model in MODELS:
            ca, cb = curve(runs[f"{model}-{a}"]), curve(runs[f"{model}-{b}"])
            step = first_part(ca, cb)
            print(
                f"| {what} | {model} | {rel(ca[0], cb[0]):.1e} | {rel(ca[-1], cb[-1]):.1e} | "
                f"{'never' if step is None else f'step {step}'} |"
            )
    print()
    print("| model | default ms/step | deterministic | cudnn.benchmark | index_add_ | + determ. |")
    print("|---|---|---|---|---|---|")
    for model, configs in measured["timing"].items():
        ms = {name: c["ms_per_step"] for name, c in configs.items()}
        cells = [
            f"{ms[name]:.2f} ({ms[name] / ms[against]:.2f}x)"
            for name, against in (
                ("deterministic", "default"),
                ("benchmark", "default"),
                ("scatter", "default"),
                ("scatter_deterministic", "scatter"),
            )
        ]
        print(f"| {model} | {ms['default']:.2f} | {' | '.join(cells)} |")
    timing = measured["capture_check"]["timing"]
    print()
    print(
        f"capture {1000 * timing['capture_median_s']:.1f} ms, collect_env "
        f"{1000 * timing['collect_env_median_s']:.0f} ms ({timing['ratio']:.0f}x)"
    )


if __name__ == "__main__":
    main()
