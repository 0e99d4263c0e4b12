"""DataLoaders with worker processes: the recorder counts the batches they yield."""

from __future__ import annotations

import torch
from torch.utils.data import (
    DataLoader,
)

from mlflow_fingerprint.run.loaders import LoaderRecorder


def test_batches_are_counted_as_yielded_through_workers_and_early_breaks() -> None:
    """Counted where the training loop takes them: a loop that stops early counts what it took,
    persistent workers (one iterator reused every epoch) count every epoch, and after the run
    nothing counts any more (the original ``__next__`` is back)."""
    iterator_type = torch.utils.data.dataloader._BaseDataLoaderIter
    original_next = iterator_type.__next__
    train = DataLoader(list(range(40)), batch_size=4, num_workers=1, persistent_workers=True)
    val = DataLoader(list(range(40)), batch_size=20)
    recorder = LoaderRecorder().start()
    try:
        assert iterator_type.__next__ is not original_next
        for _epoch in range(2):
            for step, _batch in enumerate(train):
                if step == 6:  # 7 batches taken, the 8th never asked for
                    break
            list(val)
    finally:
        recorder.stop()
    assert iterator_type.__next__ is original_next
    assert [d["batches_seen"] for d in recorder.loaders()] == [14, 4]
    list(val)
    assert recorder.loaders()[1]["batches_seen"] == 4
