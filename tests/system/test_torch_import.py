"""Two threads whose first ``import torch`` happens at once never raise into training.

Each case is a fresh interpreter (torch not yet imported) starting two threads that meet at a
barrier and then call the package's torch-touching entries: seeding, a seeded DataLoader generator,
a fingerprint capture. Before the import lock, the second thread got the half-initialised module
(``AttributeError: partially initialized module 'torch'``) in nearly every such run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from support.paths import ROOT

SRC = str(ROOT / "src")

RACE = """
import json, sys, threading
import mlflow_fingerprint as mfp

assert "torch" not in sys.modules, "torch already imported: nothing would race"
barrier = threading.Barrier(2, timeout=60)
failures, versions = [], []

def seed():
    mfp.seed_everything(0)
    mfp.dataloader_generator(0)

def capture():
    versions.append(mfp.capture().get("torch.version"))

def run(entry):
    barrier.wait()
    try:
        entry()
    except BaseException as exc:
        failures.append(f"{type(exc).__name__}: {exc}")

entries = {"seed": seed, "capture": capture}
threads = [threading.Thread(target=run, args=(entries[name],)) for name in sys.argv[1:]]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
import torch
print(json.dumps({"failures": failures, "versions": versions, "torch": torch.__version__}))
"""


@pytest.mark.parametrize(
    ("first", "second"), [("seed", "seed"), ("seed", "capture")], ids=["seed+seed", "seed+capture"]
)
def test_first_torch_import_in_two_threads_at_once_never_raises(first: str, second: str) -> None:
    for attempt in range(6):
        done = subprocess.run(
            [sys.executable, "-c", RACE, first, second],
            capture_output=True,
            text=True,
            timeout=240,
            env={**os.environ, "PYTHONPATH": SRC},
        )
        assert done.returncode == 0, done.stderr[-2000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result["failures"] == [], f"attempt {attempt}: {result['failures']}"
        # a capture that raced the import still read the real torch, not a half-made module
        assert result["versions"] == [result["torch"]] * (second == "capture")
