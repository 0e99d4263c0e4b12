"""An exact digest and a magnitude of a tensor, computed on the tensor's own device.

Why integers over the raw bits: a float reduction (a sum, a norm) is computed in an order the
kernel chooses, so on a GPU two reductions of one tensor can differ, and two tensors that differ
in one low bit can reduce to the same float. The digest reads the tensor's bytes as int32 words,
cut into rows of ``ROW`` words, and takes for each row two weighted sums ``sum(x_j * w_j)`` with
fixed odd weights, in int32 arithmetic that wraps modulo 2**32 (two's complement, as PyTorch's CPU
and CUDA integer kernels compute it). Wrapping addition is associative, so the row sums do not
depend on the order a kernel adds in: the digest is the same on every run, thread count and
device. The row sums (a few hundred numbers for the largest layers) are combined on the host,
later, on the writer's thread, with row weights modulo the prime ``2**61 - 1``.

Any one changed bit always shows: it changes a word by ``±2**b`` (b < 32), its row's sum by
``2**b * w_j`` modulo 2**32, never 0 since ``w_j`` is odd, and the digest by that non-zero
amount (smaller than the prime) times a row weight, never a multiple of the prime. Two weight sets
make a chance collision of a many-bit difference about 2**-64 per row.

Why not int64 or float64 arithmetic: widening a tensor to 64 bits costs ten times the multiply
and sum themselves on a CPU (measured), and the digest runs on the training thread.

The magnitude is the Euclidean norm, computed in the tensor's precision (float32 at least) and
stored as a float64 number: not exact, only there to say how large a difference is once the
digests say there is one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PRIME = (1 << 61) - 1
ROW = 1 << 16  # words per row: weights are this long, row sums few even for large layers
_WEIGHT_SEEDS = (0x9E3779B1, 0x85EBCA77)


@dataclass(frozen=True)
class Pending:
    """A tensor's reductions, still tensors on its device; read (a host sync on a GPU) later, on
    the writer's thread, so the training thread never waits for them."""

    sums: Any  # int32, (rows, weight sets): each row's weighted sums, the tail last
    norm: Any
    dtype: str
    shape: tuple[int, ...]

    def value(self) -> tuple[str, float]:
        """(digest as 32 hex digits, norm)."""
        totals = [0] * len(_WEIGHT_SEEDS)
        for row, sums in enumerate(self.sums.tolist()):
            for k, s in enumerate(sums):
                totals[k] = (totals[k] + (s & 0xFFFFFFFF) * _row_weight(k, row)) % PRIME
        return "".join(f"{t:016x}" for t in totals), float(self.norm)


def _row_weight(k: int, row: int) -> int:
    """The weight of row ``row`` in set ``k``: in [1, PRIME)."""
    return ((row + 1) * _WEIGHT_SEEDS[k] * 0x2545F491) % (PRIME - 1) + 1


class Weights:
    """The word weights (odd int32, one row of ``ROW`` per weight set) on each device seen."""

    def __init__(self) -> None:
        self._by_device: dict[Any, Any] = {}

    def on(self, device: Any) -> Any:
        found = self._by_device.get(device)
        if found is None:
            import torch

            index = torch.arange(ROW, dtype=torch.int64)
            found = torch.stack(
                [((index * seed + (seed >> 7)) % (1 << 31)) | 1 for seed in _WEIGHT_SEEDS]
            )
            found = found.to(torch.int32).to(device)
            self._by_device[device] = found
        return found


def _words(tensor: Any) -> tuple[Any, Any]:
    """The tensor's bytes as (int32 words in rows of ``ROW``, the remaining words as int32)."""
    import torch

    t = tensor.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    if t.dtype == torch.bool:
        t = t.view(torch.uint8)
    raw = t.contiguous().reshape(-1).view(torch.uint8)
    whole = raw.numel() // 4 * 4
    words = raw[:whole].view(torch.int32)
    rows = words.numel() // ROW * ROW
    tail = words[rows:]
    if whole < raw.numel():  # 1 to 3 bytes left: one word more, zero-padded
        tail = torch.cat([tail, raw[whole:].to(torch.int32)])
    return words[:rows].view(-1, ROW), tail


def _norm(t: Any) -> Any:
    import torch

    if not (t.is_floating_point() or t.is_complex()):
        return torch.linalg.vector_norm(t.to(torch.float32))
    if t.is_floating_point() and t.element_size() < 4:
        return torch.linalg.vector_norm(t, dtype=torch.float32)
    return torch.linalg.vector_norm(t)


def reduce(tensor: Any, weights: Weights) -> Pending:
    """Start the digest and norm of ``tensor`` (on its device); :meth:`Pending.value` reads them."""
    import torch

    with torch.no_grad():
        main, tail = _words(tensor)
        w = weights.on(main.device)
        parts = []
        if main.numel():
            # one weight set at a time: a broadcast over both is several times slower on a CPU
            parts.append(torch.stack([(main * row).sum(dim=1, dtype=torch.int32) for row in w], 1))
        if tail.numel() or not parts:
            parts.append((w[:, : tail.numel()] * tail).sum(dim=1, dtype=torch.int32).unsqueeze(0))
        sums = torch.cat(parts) if len(parts) > 1 else parts[0]
        norm = _norm(tensor.detach())
    return Pending(sums, norm, str(tensor.dtype).removeprefix("torch."), tuple(tensor.shape))
