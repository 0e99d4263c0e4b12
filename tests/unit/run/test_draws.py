"""``draws_random`` found by fetching one item (``run/draws.py``): true for a real augmentation
library (kornia) and a hand-written random transform, false for a deterministic one, and every
generator's state exactly as it was afterwards. torchvision is not used: its wheels do not import
with the CPU-only torch these machines have."""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from mlflow_fingerprint.run import draws
from mlflow_fingerprint.run.loaders import LoaderRecorder


class Images(Dataset):
    """Sixteen 1×8×8 images through ``transform``."""

    def __init__(self, transform=None) -> None:
        self.images = torch.arange(16 * 64, dtype=torch.float32).reshape(16, 1, 8, 8) / 1024
        self.transform = transform

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int):
        image = self.images[index]
        return self.transform(image) if self.transform is not None else image


class KorniaAffine:
    """kornia's RandomAffine on one image (kornia works on batches)."""

    def __init__(self) -> None:
        import kornia.augmentation as K

        self.augment = K.RandomAffine(degrees=15.0, translate=(0.1, 0.1), p=1.0)

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        return self.augment(image.unsqueeze(0)).squeeze(0)


def flip_half_the_time(image: torch.Tensor) -> torch.Tensor:
    """A hand-written random transform, drawing from Python's random."""
    return image.flip(-1) if random.random() < 0.5 else image


def numpy_noise(image: torch.Tensor) -> torch.Tensor:
    return image + torch.from_numpy(np.random.normal(0, 0.01, image.shape).astype("float32"))


class OwnGenerator:
    """Draws from a generator the dataset holds itself."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(7)

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        return image * float(self.rng.uniform(0.9, 1.1))


def normalise(image: torch.Tensor) -> torch.Tensor:
    return (image - 0.5) / 0.5


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(draws, "_known", draws.weakref.WeakKeyDictionary())
    monkeypatch.setattr(draws, "_slow", draws.threading.Event())
    monkeypatch.delenv("MLFLOW_FINGERPRINT_DRAWS_PROBE", raising=False)


def states() -> tuple[bytes, bytes, tuple]:
    return (
        torch.get_rng_state().numpy().tobytes(),
        np.random.get_state(legacy=True)[1].tobytes(),
        random.getstate(),
    )


@pytest.fixture
def session_generators() -> Iterator[None]:
    """The session's global generators, given back as they were after the test seeds them."""
    kept = (torch.get_rng_state(), np.random.get_state(), random.getstate())
    yield
    torch.set_rng_state(kept[0])
    np.random.set_state(kept[1])
    random.setstate(kept[2])


@pytest.mark.parametrize(
    ("transform", "expected"),
    [
        (KorniaAffine, True),
        (lambda: flip_half_the_time, True),
        (lambda: numpy_noise, True),
        (OwnGenerator, True),
        (lambda: normalise, False),
        (lambda: None, False),
    ],
    ids=["kornia", "hand-written", "numpy", "own-generator", "deterministic", "plain"],
)
@pytest.mark.usefixtures("session_generators")
def test_fetching_one_item_tells_and_puts_every_state_back(transform, expected) -> None:
    dataset = Images(transform())
    loader = DataLoader(dataset, batch_size=4, shuffle=True)
    torch.manual_seed(3)
    random.seed(3)
    np.random.seed(3)
    before = states()
    own = getattr(dataset.transform, "rng", None)
    own_before = own.bit_generator.state if own is not None else None
    assert draws.probe(loader) is expected
    assert states() == before
    if own is not None:
        assert own.bit_generator.state == own_before


def test_the_loader_recorder_measures_an_undeclared_dataset_when_it_is_iterated() -> None:
    recorder = LoaderRecorder().start()
    try:
        loader = DataLoader(Images(flip_half_the_time), batch_size=4)
        recorder.add(loader)  # passed to the training function: described, not probed yet
        assert recorder.loaders()[0]["dataset"]["draws_random"] is None
        next(iter(loader))
        (found,) = recorder.loaders()  # the same set-up, now measured
        assert found["dataset"]["draws_random"] is True
    finally:
        recorder.stop()


def test_the_probe_can_be_turned_off_and_leaves_iterables_alone(monkeypatch) -> None:
    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            yield torch.rand(3)

    assert draws.probe(DataLoader(Stream(), batch_size=None)) is None
    monkeypatch.setenv("MLFLOW_FINGERPRINT_DRAWS_PROBE", "0")
    assert draws.probe(DataLoader(Images(flip_half_the_time), batch_size=4)) is None


def test_a_fetch_that_fails_is_unavailable_and_restores_the_states() -> None:
    def broken(image: torch.Tensor) -> torch.Tensor:
        torch.rand(1)
        raise OSError("file gone")

    before = states()
    found = draws.probe(DataLoader(Images(broken), batch_size=4))
    assert found == {"unavailable": "fetching one item raised OSError"}
    assert states() == before


class Logging(Dataset):
    """Logs each item it serves, as tests/system/test_worker_metrics.py's dataset does."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> torch.Tensor:
        from mlflow_fingerprint import log_metrics

        log_metrics({"served": float(index)}, step=index)
        return torch.tensor([float(index)])


class Collected:
    """A metric sink that keeps what it is given."""

    run_id = "collected"

    def __init__(self) -> None:
        self.values: list[tuple[dict, int | None]] = []

    def log_metrics(self, values, step=None) -> None:
        self.values.append((dict(values), step))


def test_what_the_probes_fetch_logs_is_discarded_and_the_trainings_own_fetch_is_kept() -> None:
    from mlflow_fingerprint.run.current import entered

    sink = Collected()
    with entered(sink):
        assert draws.measure(Logging()) is False
        assert sink.values == []
        Logging()[0]
    assert sink.values == [({"served": 0.0}, 0)]
