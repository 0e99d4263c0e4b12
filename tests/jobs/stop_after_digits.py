"""Target of tests/system/test_rerun_apply.py: a decorated ``examples/digits.py`` training whose
loop and whose caller each leave a file behind when they run to their end, so a test can tell
that MLFLOW_FINGERPRINT_STOP_AFTER ended the training and skipped what follows it.

    python tests/jobs/stop_after_digits.py OUT_DIR

The training loop runs inside an ``except Exception`` that would swallow an ordinary exception
(it writes ``swallowed``): the stop must pass through it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import digits  # the example, found through the path set just above
import mlflow_fingerprint as mfp

STEPS = 20


def main(out: Path) -> int:
    train_loader, _ = digits.make_loaders(batch_size=32, seed_workers=False)

    @mfp.fingerprinted(experiment="stop", seed=0, quiet=True)
    def train() -> dict[str, Any]:
        (out / "trained").write_text("started")
        try:
            result = digits.train(train_loader, epochs=1, max_steps=STEPS)
        except Exception as exc:  # what a user's loop may do; the stop is no Exception
            (out / "swallowed").write_text(repr(exc))
            raise
        (out / "after_loop").write_text("the loop ran to its end")
        return result

    train()
    (out / "after_train").write_text("code after the training ran")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
