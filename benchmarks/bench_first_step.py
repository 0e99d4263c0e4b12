"""What the first-step record (``first_step``: the initial weights' and the first batch's digests)
costs a training: for a model of about 100M parameters on CPU, the record itself against the same
first optimizer step without it, and what is left of it after the first step.

The model is 12 linear layers of 2048 -> 4096 (100.7M float32 parameters, 403 MB), SGD, one batch
of 64 x 2048. Measured, each as the median of ``--repeats``:

- the record: what torch's optimizer pre-hook does at the first step (``FirstStepRecorder``: the
  weights' digest, every tensor over 64 KiB sampled) plus the batch's digest, timed alone, as
  CPU time (median) and as the best wall time;
- the first step without it: ``optimizer.step()`` of the same model (CPU time), for scale (the
  record's share of it is the ratio);
- after the first step: a step's CPU time with a run's recorder started and fired against a
  step's without any, alternating. After the first step the process's one hook finds no run
  waiting (printed): what remains is one test of an empty list per batch a loader yields,
  and the difference printed is the machine's noise.

    python benchmarks/bench_first_step.py [--repeats 15] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

LAYERS, WIDTH_IN, WIDTH_OUT, BATCH = 12, 2048, 4096, 64


def _median_ms(fn: Callable[[], Any], repeats: int) -> float:
    """The median CPU time of ``fn`` (this process's, so a machine others load counts less)."""
    times = []
    for _ in range(repeats):
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return statistics.median(times) * 1000


def _best_wall_ms(fn: Callable[[], Any], repeats: int) -> float:
    """The shortest wall time of ``fn``: the run least disturbed by other processes."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import torch

    from mlflow_fingerprint.capture.first_step import batch_record, weights_record
    from mlflow_fingerprint.run import first_step
    from mlflow_fingerprint.run.first_step import FirstStepRecorder

    torch.set_num_threads(args.threads)
    model = torch.nn.Sequential(*(torch.nn.Linear(WIDTH_IN, WIDTH_OUT) for _ in range(LAYERS)))
    params = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    batch = (torch.randn(BATCH, WIDTH_IN), torch.randint(0, 10, (BATCH,)))
    for p in model.parameters():
        p.grad = torch.zeros_like(p)

    def record() -> None:
        recorder = FirstStepRecorder()
        recorder._first_batch(batch)
        recorder.taken("torch.optim", lambda: weights_record([list(model.parameters())], torch))

    record()  # warm-up
    weights_ms = _median_ms(lambda: weights_record([list(model.parameters())], torch), args.repeats)
    batch_ms = _median_ms(lambda: batch_record(batch, torch), args.repeats)
    record_ms = _median_ms(record, args.repeats)
    record_wall_ms = _best_wall_ms(record, args.repeats)
    step_ms = _median_ms(optimizer.step, args.repeats)

    # After the first step: a started recorder that fired, against none.
    plain, recorded = [], []
    for i in range(args.repeats):
        for with_recorder in (i % 2 == 0, i % 2 == 1):
            recorder = FirstStepRecorder().start() if with_recorder else None
            optimizer.step()  # the first step (the hook fires once, if started)
            started = time.process_time()
            optimizer.step()
            (recorded if with_recorder else plain).append(time.process_time() - started)
            if recorder is not None:
                assert not first_step.waiting()  # the hook finds its list empty from now on
                recorder.stop()
    after = statistics.median(recorded) * 1000 - statistics.median(plain) * 1000

    print(f"model: {params / 1e6:.1f}M parameters ({LAYERS * 2} tensors), threads {args.threads}")
    print(
        f"first-step record (weights + batch): {record_ms:.2f} ms CPU, median "
        f"(weights {weights_ms:.2f} ms, batch {batch_ms:.2f} ms); best wall {record_wall_ms:.2f} ms"
    )
    print(
        f"first optimizer step without it: {step_ms:.1f} ms; the record adds "
        f"{record_ms / step_ms:.1%} to it"
    )
    print(
        f"a later step with a recorder that fired minus one without: {after:+.2f} ms "
        f"(median of {args.repeats}; runs still waiting for a first step: "
        f"{first_step.waiting()})"
    )


if __name__ == "__main__":
    main()
