"""What ``mfp.watch(model)`` costs a training: wall time with the default step selection against
the same training unwatched (``steps=()``, which installs nothing), and the cost of one watched
step.

Two models on CPU, each trained inside a ``mfp.fingerprinted`` run on a fresh local sqlite store:

- the digits CNN of ``examples/digits.py`` (about 100k parameters), ``--steps`` steps (500);
- an MLP of about 20M parameters (1024 -> 4096 -> 4096 -> 10, Adam, random batches of 64),
  ``--mlp-steps`` steps (500; ``--mlp-steps 0`` leaves it out).

The loop alone is timed (from the ``watch`` call to the last ``optimizer.step()``), not the run's
start and end. After a short warm-up run (imports, first allocations), unwatched and watched runs
alternate in pairs, ``--repeats`` pairs (``--mlp-repeats`` for the MLP), every other pair in the
other order (unwatched first, then watched first), so a load that rises or falls over the
benchmark falls on both alike; the overhead is the ratio of the watched loop's median to the
unwatched one's, and, steadier where others load the machine, the median of each pair's ratio
(the two runs of a pair share the machine's load of the moment). The cost of a watched step is
the median of the watched steps' durations minus the median of the others', in the watched
runs; times the number of watched steps, over the unwatched loop, it gives the overhead again
without the noise of whole-loop times ("from the steps"). ``--threads`` (default 1) is torch's
intra-op thread count: on a machine others load too, two spinning threads measure the load more
than the training.

    python benchmarks/bench_watch.py [--steps 500] [--mlp-steps 500] [--repeats 9]
        [--mlp-repeats 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROJECTED_STEPS = 500  # a shorter run's per-step figures are also given for a run this long
WARM_UP_STEPS = 20


@dataclass(frozen=True)
class Timing:
    loop_s: float
    step_s: tuple[float, ...]  # each step's duration
    watched: frozenset[int]


@dataclass(frozen=True)
class Model:
    name: str
    build: Callable[[], Any]
    batches: Callable[[int], Iterator[tuple[Any, Any]]]
    steps: int


def digits_model(steps: int) -> Model:
    sys.path.insert(0, str(ROOT / "examples"))
    import torch

    import digits

    def batches(n: int) -> Iterator[tuple[Any, Any]]:
        loader = torch.utils.data.DataLoader(
            digits.Digits(train=True),
            batch_size=64,
            shuffle=True,
            generator=torch.Generator().manual_seed(0),
        )
        served = 0
        while True:
            for batch in loader:
                if served == n:
                    return
                served += 1
                yield batch

    return Model("digits CNN", digits.DigitsCNN, batches, steps)


def mlp_model(steps: int) -> Model:
    import torch
    from torch import nn

    def build() -> nn.Module:
        return nn.Sequential(
            nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 10)
        )

    def batches(n: int) -> Iterator[tuple[Any, Any]]:
        g = torch.Generator().manual_seed(0)
        for _ in range(n):
            yield torch.randn(64, 1024, generator=g), torch.randint(0, 10, (64,), generator=g)

    return Model("MLP", build, batches, steps)


def train(model: Model, uri: str, watched: bool, steps: int | None = None) -> Timing:
    import torch
    from torch import nn

    import mlflow_fingerprint as mfp

    with mfp.fingerprinted(experiment="bench-watch", seed=0, tracking_uri=uri):
        net = model.build()
        optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
        loss_fn = nn.CrossEntropyLoss()
        data = list(model.batches(model.steps if steps is None else steps))
        each = []
        t0 = time.perf_counter()
        watch = mfp.watch(net) if watched else mfp.watch(net, steps=())
        for step, (x, y) in enumerate(data):
            start = time.perf_counter()
            optimizer.zero_grad()
            loss = loss_fn(net(x), y)
            loss.backward()
            optimizer.step()
            mfp.log_metrics({"loss": loss.item()}, step=step)
            each.append(time.perf_counter() - start)
        loop = time.perf_counter() - t0
    chosen = frozenset(s for s in watch.steps if s < len(data)) if watched else frozenset()
    return Timing(loop, tuple(each), chosen)


def measure(model: Model, repeats: int, folder: Path) -> None:
    from mlflow import MlflowClient

    uri = f"sqlite:///{folder / 'mlflow.db'}"
    MlflowClient(uri).create_experiment("bench-watch", artifact_location=(folder / "a").as_uri())
    train(model, uri, watched=True, steps=WARM_UP_STEPS)  # warm-up: imports, first allocations
    plain, watched = [], []
    for i in range(repeats):
        for watching in (False, True) if i % 2 == 0 else (True, False):
            (watched if watching else plain).append(train(model, uri, watched=watching))
    base = statistics.median(t.loop_s for t in plain)
    with_watch = statistics.median(t.loop_s for t in watched)
    base_min, with_watch_min = min(t.loop_s for t in plain), min(t.loop_s for t in watched)
    pair_ratio = statistics.median(w.loop_s / p.loop_s for p, w in zip(plain, watched, strict=True))
    chosen = watched[0].watched
    watched_steps = [t.step_s[s] for t in watched for s in t.watched]
    other_steps = [d for t in watched for s, d in enumerate(t.step_s) if s not in t.watched]
    plain_step = statistics.median(d for t in plain for d in t.step_s)
    per_step = statistics.median(watched_steps) - statistics.median(other_steps)
    print(
        f"{model.name}: {model.steps} steps, {len(chosen)} watched {sorted(chosen)}\n"
        f"  unwatched loop  {base:8.3f} s median, {base_min:8.3f} s min (of {repeats})\n"
        f"  watched loop    {with_watch:8.3f} s median, {with_watch_min:8.3f} s min\n"
        f"  ratio           {with_watch / base:8.4f} watched/unwatched medians "
        f"({(with_watch - base) / base * 100:+.2f} %), {with_watch_min / base_min:.4f} of minima\n"
        f"  pair ratio      {pair_ratio:8.4f} median over the pairs "
        f"({(pair_ratio - 1) * 100:+.2f} %)\n"
        f"  a plain step    {plain_step * 1000:8.2f} ms (median, unwatched runs)\n"
        f"  a watched step  {per_step * 1000:+8.2f} ms more (median)\n"
        f"  from the steps  {len(chosen) * per_step / (plain_step * model.steps) * 100:+8.2f} %",
        flush=True,
    )
    if model.steps < PROJECTED_STEPS:
        from mlflow_fingerprint.run.watch import default_steps

        n = sum(1 for s in default_steps() if s < PROJECTED_STEPS)
        share = n * per_step / (plain_step * PROJECTED_STEPS) * 100
        print(f"  at {PROJECTED_STEPS} steps  {share:+8.2f} % ({n} watched, from the steps)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=500, help="digits CNN steps")
    p.add_argument("--mlp-steps", type=int, default=500, help="20M-parameter MLP steps (0: none)")
    p.add_argument("--repeats", type=int, default=9, help="pairs of digits CNN runs")
    p.add_argument("--mlp-repeats", type=int, default=3, help="pairs of MLP runs")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    folder = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    try:
        models = [(digits_model(args.steps), args.repeats)]
        if args.mlp_steps:
            models.append((mlp_model(args.mlp_steps), args.mlp_repeats))
        for i, (model, repeats) in enumerate(models):
            (folder / str(i)).mkdir()
            measure(model, repeats, folder / str(i))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
