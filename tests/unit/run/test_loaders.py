"""Describing and recording real DataLoaders."""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

import pytest
import torch
from torch.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
    default_collate,
    random_split,
)

import mlflow_fingerprint as mfp
from mlflow_fingerprint.run.loaders import LoaderRecorder, describe, find_loaders


class Stream(IterableDataset):
    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(range(5))


def init_with_offset(worker_id: int, offset: int) -> None:
    del worker_id, offset


def test_describe_a_shuffled_seeded_loader() -> None:
    loader = DataLoader(
        list(range(100)),
        batch_size=16,
        shuffle=True,
        num_workers=2,
        drop_last=True,
        worker_init_fn=mfp.seed_worker,
        generator=mfp.dataloader_generator(42),
        persistent_workers=True,
    )
    d = describe(loader)
    assert d["batch_size"] == 16
    assert d["num_workers"] == 2
    assert d["shuffle"] is True
    assert d["sampler"] == "RandomSampler"
    assert d["drop_last"] is True
    assert d["worker_init_fn"] == "mlflow_fingerprint.run.seeding.seed_worker"
    assert d["generator"] == {"present": True, "initial_seed": 42}
    assert d["persistent_workers"] is True
    assert d["prefetch_factor"] == 2
    assert d["in_order"] is True
    assert d["collate_fn"] == "torch.utils.data._utils.collate.default_collate"
    # A list only hands back what it holds, and torch's collate only stacks: nothing is drawn.
    assert d["dataset"] == {"class": "builtins.list", "length": 100, "draws_random": False}


def test_describe_a_custom_batch_sampler_and_an_iterable_dataset() -> None:
    batches = BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False)
    d = describe(
        DataLoader(
            list(range(10)),
            batch_sampler=batches,
            worker_init_fn=functools.partial(init_with_offset, offset=1),
        )
    )
    assert d["batch_size"] == 3
    assert d["batch_sampler"] == "BatchSampler"
    assert d["shuffle"] is False
    assert d["generator"] == {"present": False, "initial_seed": None}
    assert d["worker_init_fn"].endswith("test_loaders.init_with_offset")

    stream = describe(DataLoader(Stream(), batch_size=2))
    assert set(stream["dataset"]["length"]) == {"unavailable"}
    assert stream["dataset"]["class"].endswith("Stream")


def test_recorder_sees_iterated_loaders_once_and_unpatches() -> None:
    original = DataLoader.__iter__
    firsts: list[int] = []
    a = DataLoader(list(range(4)), batch_size=2)
    b = DataLoader(list(range(6)), batch_size=3)
    recorder = LoaderRecorder(on_first_iter=lambda: firsts.append(1)).start()
    try:
        assert DataLoader.__iter__ is not original
        for _ in range(2):
            list(a)
        list(b)
    finally:
        recorder.stop()
    assert DataLoader.__iter__ is original
    assert [d["batch_size"] for d in recorder.loaders()] == [2, 3]
    assert [d["batches_seen"] for d in recorder.loaders()] == [4, 2]
    assert firsts == [1]
    list(DataLoader(list(range(2))))  # after the run: not recorded
    assert len(recorder.loaders()) == 2


def test_nested_recorders_restore_the_original_only_at_the_end() -> None:
    original = DataLoader.__iter__
    outer = LoaderRecorder().start()
    inner = LoaderRecorder().start()
    list(DataLoader([1, 2]))
    inner.stop()
    assert DataLoader.__iter__ is not original
    list(DataLoader([1, 2, 3], batch_size=3))
    outer.stop()
    assert DataLoader.__iter__ is original
    assert [d["batch_size"] for d in inner.loaders()] == [1]
    assert [d["batch_size"] for d in outer.loaders()] == [1, 3]


def test_a_loader_re_created_every_epoch_is_one_entry() -> None:
    recorder = LoaderRecorder().start()
    try:
        for _epoch in range(3):
            list(DataLoader(list(range(8)), batch_size=4, shuffle=True))
    finally:
        recorder.stop()
    assert len(recorder.loaders()) == 1
    assert recorder.loaders()[0]["batches_seen"] == 6


def test_find_loaders_in_arguments() -> None:
    a, b, c = (DataLoader([1]) for _ in range(3))
    assert find_loaders([a, [b, 1], {"val": c}, torch.zeros(1), "x"]) == [a, b, c]


class Counted(Dataset):
    """Draws nothing, but does not say so; counts every sample it is asked for."""

    def __init__(self) -> None:
        self.loads = 0

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> int:
        self.loads += 1
        return index


class Declared(Counted):
    def __init__(self, flag: Any) -> None:
        super().__init__()
        self.draws_random = flag


class Broken(Counted):
    @property
    def draws_random(self) -> bool:
        raise RuntimeError("not configured yet")


def mixup(batch: list[Any]) -> Any:
    return default_collate(batch)


def draws(dataset: Any, **loader: Any) -> bool | None:
    return describe(DataLoader(dataset, **loader))["dataset"]["draws_random"]


@pytest.mark.parametrize(
    ("dataset", "expected"),
    [
        (Declared(False), False),
        (Declared(True), True),
        (Declared("no"), None),  # only a bool is a declaration
        (Broken(), None),  # a property that raises is no declaration, and no failure
        (Counted(), None),  # draws nothing, but nothing says so: never guessed
        (TensorDataset(torch.zeros(4, 2)), False),
        (list(range(4)), False),
        (random_split(TensorDataset(torch.zeros(4)), [2, 2])[0], False),
        (random_split(Counted(), [2, 2])[0], None),
        (ConcatDataset([Declared(False), TensorDataset(torch.zeros(2))]), False),
        (ConcatDataset([Declared(False), Declared(True)]), True),
        (ConcatDataset([Declared(False), Counted()]), None),
    ],
    ids=lambda v: type(v).__name__,
)
def test_draws_random_is_declared_or_known_and_otherwise_unknown(dataset, expected) -> None:
    assert draws(dataset) is expected


def test_a_custom_collate_fn_counts_as_drawing_unless_it_declares_otherwise() -> None:
    quiet = Declared(False)
    assert draws(quiet, batch_size=2, collate_fn=mixup) is None
    declared = functools.partial(default_collate)
    declared.draws_random = False  # type: ignore[attr-defined]
    assert draws(quiet, batch_size=2, collate_fn=declared) is False
    declared.draws_random = True  # type: ignore[attr-defined]
    assert draws(quiet, batch_size=2, collate_fn=declared) is True
    assert draws(quiet, batch_size=None) is False  # default_convert: no batching, no draws


def test_reading_draws_random_neither_loads_a_sample_nor_moves_an_rng() -> None:
    datasets = [Counted(), Declared(False)]
    before = torch.get_rng_state()
    for dataset in datasets:
        describe(DataLoader(dataset, batch_size=2, shuffle=True, num_workers=2))
    assert [d.loads for d in datasets] == [0, 0]
    assert torch.equal(torch.get_rng_state(), before)


@pytest.mark.parametrize("augment", [False, True])
def test_the_digits_example_declares_what_its_code_cannot_show(digits: ModuleType, augment) -> None:
    """Digits(augment=False) draws nothing, yet its __getitem__ names torch.randn_like: only its
    declaration tells the two apart; without it the loader is unknown either way."""
    train, _ = digits.make_loaders(augment=augment)
    assert describe(train)["dataset"]["draws_random"] is augment
    undeclared = type("UndeclaredDigits", (digits.Digits,), {"draws_random": None})
    assert draws(undeclared(train=True, augment=augment)) is None
    assert draws(digits.Digits(train=True, augment=augment), batch_size=8) is augment
