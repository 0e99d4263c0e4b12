"""The data and the two models of the GPU truth runs (``record.py``): a small CNN on scikit-learn's
bundled digits and a small transformer on synthetic token sequences.

Both models take their initial weights from the global torch RNG on the CPU (the run's seed), and
are moved to the device afterwards, so a CPU run and a GPU run of one seed start from the same
weights. Neither has dropout: the only randomness a run draws is the shuffle of its DataLoader
(the CPU generator, the same on every device), so what separates two runs is arithmetic.

``scatter=True`` pools through ``Tensor.index_add_``, whose CUDA kernel adds with atomics: the
order of the additions, and so the rounding, changes from run to run unless deterministic
algorithms are on (then torch takes a sorted, deterministic path). It is the
"nondeterministic kernel" of PyTorch's reproducibility notes, made explicit.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import TensorDataset

VOCAB = 64
SEQ = 32
CLASSES = 10


def digits() -> TensorDataset:
    """The 1,797 digits as 1x8x8 float tensors in [0, 1], with their labels."""
    from sklearn.datasets import load_digits

    data = load_digits()
    images = torch.tensor(data.images, dtype=torch.float32).unsqueeze(1) / 16.0
    return TensorDataset(images, torch.tensor(data.target, dtype=torch.long))


def tokens(count: int = 2048) -> TensorDataset:
    """Token sequences from a generator of their own (the same on every machine); the label is
    the sum of the first eight tokens modulo 10, which a transformer learns in a few hundred
    steps."""
    made = torch.Generator().manual_seed(7)
    x = torch.randint(0, VOCAB, (count, SEQ), generator=made)
    return TensorDataset(x, x[:, :8].sum(dim=1) % CLASSES)


class ScatterPool(nn.Module):
    """The mean over the middle axis of (batch, rows, channels): with ``atomic``, through
    ``index_add_`` (atomic adds on CUDA), otherwise through ``sum``."""

    def __init__(self, atomic: bool) -> None:
        super().__init__()
        self.atomic = atomic

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, rows, channels = x.shape
        if not self.atomic:
            return x.sum(dim=1) / rows
        owner = torch.arange(batch, device=x.device).repeat_interleave(rows)
        pooled = x.new_zeros(batch, channels).index_add_(0, owner, x.reshape(-1, channels))
        return pooled / rows


class DigitsCNN(nn.Module):
    """conv-relu-conv-relu-pool, then a dense layer on the feature map plus a pooled context."""

    def __init__(self, scatter: bool = False) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 64x4x4
        )
        self.pool = ScatterPool(scatter)
        self.dense = nn.Linear(64 * 16, 128)
        self.context = nn.Linear(64, 128)
        self.head = nn.Linear(128, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        maps = self.features(x)
        pooled = self.pool(maps.flatten(2).transpose(1, 2))
        hidden = torch.relu(self.dense(maps.flatten(1)) + self.context(pooled))
        return self.head(hidden)


class TinyTransformer(nn.Module):
    """Two pre-norm encoder layers (d=64, 4 heads) over embedded tokens, pooled, then a head."""

    def __init__(self, scatter: bool = False) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 64)
        self.position = nn.Parameter(0.02 * torch.randn(SEQ, 64))
        layer = nn.TransformerEncoderLayer(
            64, 4, dim_feedforward=128, dropout=0.0, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.pool = ScatterPool(scatter)
        self.head = nn.Linear(64, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.encoder(self.embed(x) + self.position)))


def build(name: str, scatter: bool) -> tuple[nn.Module, TensorDataset]:
    """The model (weights drawn now, on the CPU) and its data set."""
    if name == "cnn":
        return DigitsCNN(scatter), digits()
    if name == "transformer":
        return TinyTransformer(scatter), tokens()
    raise ValueError(f"unknown model {name!r}")
