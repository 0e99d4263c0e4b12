"""A small explain report built by hand, whose every number is known: the input of the unit tests
of ``present/explain``'s renderers (one important field, one ruled out, one outlier, a left-out
run)."""

from __future__ import annotations

from mlflow_fingerprint.explain.result import (
    Explanation,
    Factor,
    LeftOut,
    Level,
    Noise,
    Outlier,
)

LR = Factor(
    ("program.call.lr",), "program.call.lr", 0.8, (0.7, 0.9),
    (Level("0.1", 3, 1.0, 0.05, (0.95, 1.0, 1.05)), Level("0.2", 3, 2.0, 0.05, (1.95, 2.0, 2.05))),
    False, "important", df=1, p=0.001,
)  # fmt: skip
THREADS = Factor(
    ("torch.threads.intra_op",), "torch.threads.intra_op", 0.0, (0.0, 0.02),
    (Level("1", 3, 1.5, 0.5), Level("4", 3, 1.5, 0.5)), False, "ruled_out", df=1, p=0.9,
)  # fmt: skip


def sample() -> Explanation:
    return Explanation(
        "sweep", "7", "val_loss", "final", 6, 1.5, 0.55,
        Noise(0.05, 0.1, 2, 6, 4, ("seeds.requested",)),
        (LR, THREADS), ruled_out=("torch.threads.intra_op",),
        outliers=(Outlier("run-odd", "g1", 4.2, "fingerprint diff run-odd run-a", "odd", 1.3),),
        left_out=(LeftOut("run-x", "no val_loss", "crashed"),),
    )  # fmt: skip
