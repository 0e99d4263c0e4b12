"""What a run's first step started from, measured: the initial weights, the first batch,
whether the generators had been drawn from before they were seeded, and whether the training ran
code ``torch.compile`` made (the ``first_step`` section).

The comparator used to infer what two runs started from; these facts let it say it. A model built
at module level draws its weights from torch's generator before ``fingerprinted(seed=0)`` seeds
it: every run then starts from other weights although both "were seeded with 0", and the digest
of the weights shows it at once.

Bounded cost on the training thread, whatever the model's size: a tensor of at most
``SAMPLE_OVER_BYTES`` enters its digest whole; a larger one by ``SAMPLE_BYTES`` taken at an even
stride over its elements, and only those bytes are copied to the host (``sampled`` says what was
taken). Two digests that differ show the tensors differ; two equal digests of sampled tensors show
they agree at every sampled element (a stride of thousands of elements still hits every row of a
freshly initialised layer, which is what a seed changes).
"""

from __future__ import annotations

import hashlib
import random
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from ..model.fingerprint import unavailable
from .seeds import CHOSEN_SEED_LIMIT

SAMPLE_OVER_BYTES = 64 * 1024
SAMPLE_BYTES = 4096
# A batch is walked this deep and this wide (nested tuples, lists and dicts of tensors).
MAX_BATCH_DEPTH = 4
MAX_BATCH_ITEMS = 256
DIGEST_LENGTH = 16

# Where a first-step record was taken: torch's optimizer hook, or a framework's callback.
RECORDERS = ("torch.optim", "lightning", "keras", "transformers")


def _element_size(tensor: Any) -> int:
    size = getattr(tensor, "element_size", None)
    return int(size()) if callable(size) else int(getattr(tensor, "itemsize", 1))


def _torch_bytes(tensor: Any, torch: Any) -> tuple[bytes, bool]:
    """A torch tensor's bytes, or a strided sample of them: (bytes, sampled)."""
    t = tensor.detach()
    numel = t.numel()
    size = _element_size(t)
    if numel * size <= SAMPLE_OVER_BYTES:
        flat = t.reshape(-1)
        sampled = False
    else:
        count = max(1, SAMPLE_BYTES // size)
        stride = -(-numel // count)
        if t.is_contiguous():
            flat = t.view(-1)[::stride]
        else:  # take() gathers the elements in row-major order without copying the rest
            flat = torch.take(t, torch.arange(0, numel, stride, device=t.device))
        sampled = True
    flat = flat.contiguous()
    if t.dtype.is_complex:
        flat = torch.view_as_real(flat).reshape(-1)
    data = flat.view(torch.uint8) if flat.dtype != torch.bool else flat.to(torch.uint8)
    return data.cpu().numpy().tobytes(), sampled


def _array_bytes(array: Any) -> tuple[bytes, bool]:
    """A numpy array's (or a Keras/TF variable read as one) bytes, or a strided sample."""
    flat = array.reshape(-1)
    size = max(1, int(array.itemsize))
    if flat.size * size <= SAMPLE_OVER_BYTES:
        return flat.tobytes(), False
    count = max(1, SAMPLE_BYTES // size)
    return flat[:: -(-flat.size // count)].tobytes(), True


class Digest:
    """A digest over tensors, each by its shape, dtype and (sampled) bytes, with the counts."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.tensors = 0
        self.elements = 0
        self.sampled = 0

    def add(self, shape: Any, dtype: Any, data: bytes, sampled: bool, elements: int) -> None:
        self._sha.update(f"{tuple(shape)}|{dtype}|{len(data)}|".encode())
        self._sha.update(data)
        self.tensors += 1
        self.elements += elements
        self.sampled += int(sampled)

    def add_torch(self, tensor: Any, torch: Any) -> None:
        data, sampled = _torch_bytes(tensor, torch)
        self.add(tensor.shape, tensor.dtype, data, sampled, int(tensor.numel()))

    def add_array(self, array: Any) -> None:
        data, sampled = _array_bytes(array)
        self.add(array.shape, array.dtype, data, sampled, int(array.size))

    def add_value(self, value: Any) -> None:
        """A non-tensor item of a batch (a label string, a number, an id): by its repr."""
        self._sha.update(f"{type(value).__name__}|{value!r}|".encode())

    def hexdigest(self) -> str:
        return self._sha.hexdigest()[:DIGEST_LENGTH]

    def record(self) -> dict[str, Any]:
        return {
            "digest": self.hexdigest(),
            "tensors": self.tensors,
            "elements": self.elements,
            "tensors_sampled": self.sampled,
        }


def sampling() -> dict[str, int]:
    """What a sampled tensor contributes: its first bytes at an even stride."""
    return {"over_bytes": SAMPLE_OVER_BYTES, "sample_bytes": SAMPLE_BYTES}


def _combined(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    found = list(parts)
    sha = hashlib.sha256("|".join(p["digest"] for p in found).encode())
    return {
        "digest": sha.hexdigest()[:DIGEST_LENGTH],
        "tensors": sum(p["tensors"] for p in found),
        "elements": sum(p["elements"] for p in found),
        "tensors_sampled": sum(p["tensors_sampled"] for p in found),
    }


def weights_record(groups: Iterable[Iterable[Any]], torch: Any) -> dict[str, Any]:
    """The digest of each parameter group's tensors (an optimizer's ``param_groups``' params, or
    a framework's variables as numpy arrays) and of all of them, with what was sampled."""
    records = []
    for params in groups:
        digest = Digest()
        for p in params:
            if torch is not None and isinstance(p, torch.Tensor):
                digest.add_torch(p, torch)
            else:
                digest.add_array(p)
        records.append(digest.record())
    return {**_combined(records), "groups": records, "sampling": sampling()}


def optimizer_groups(optimizer: Any) -> list[list[Any]]:
    return [list(group.get("params", ())) for group in optimizer.param_groups]


def _leaves(value: Any, depth: int = 0) -> Iterator[Any]:
    """The items of a batch in order: tensors and arrays inside tuples, lists and dicts."""
    if depth > MAX_BATCH_DEPTH:
        return
    if isinstance(value, Mapping):
        for key in sorted(value, key=str)[:MAX_BATCH_ITEMS]:
            yield str(key)
            yield from _leaves(value[key], depth + 1)
    elif isinstance(value, list | tuple):
        for item in value[:MAX_BATCH_ITEMS]:
            yield from _leaves(item, depth + 1)
    else:
        yield value


def batch_record(batch: Any, torch: Any) -> dict[str, Any]:
    """The digest of one batch as its loader yielded it (inputs and targets alike)."""
    digest = Digest()
    for leaf in _leaves(batch):
        if torch is not None and isinstance(leaf, torch.Tensor):
            digest.add_torch(leaf, torch)
        elif hasattr(leaf, "tobytes") and hasattr(leaf, "reshape") and hasattr(leaf, "itemsize"):
            digest.add_array(leaf)
        else:
            digest.add_value(leaf)
    return {**digest.record(), "sampling": sampling()}


# -- were the generators drawn from before seeding? -------------------------------------------


def _python_position() -> int:
    return int(random.getstate()[1][-1])


def _numpy_position(numpy: Any) -> tuple[int, int]:
    _, _, pos, has_gauss, _ = numpy.random.get_state(legacy=True)
    return int(pos), int(has_gauss)


class _Fresh:
    """Where a Mersenne Twister that has drawn nothing stands: just seeded (624 in both), or,
    for numpy's global generator, just built from OS entropy (623 on numpy 2)."""

    python = 624
    numpy: frozenset[int] | None = None

    @classmethod
    def numpy_positions(cls, numpy: Any) -> frozenset[int]:
        if cls.numpy is None:
            cls.numpy = frozenset(
                int(numpy.random.RandomState(seed).get_state(legacy=True)[2]) for seed in (None, 0)
            )
        return cls.numpy


def _torch_drawn(torch: Any) -> dict[str, Any]:
    """torch's CPU generator: drawn iff its state is not what seeding it with its own
    ``initial_seed()`` gives; the seed it was drawn from, and whether a program chose it (torch
    draws a 64-bit seed from the OS at start-up; people choose small ones)."""
    seed = int(torch.initial_seed())
    fresh = torch.Generator().manual_seed(seed).get_state()
    return {
        "drawn": not torch.equal(fresh, torch.get_rng_state()),
        "seed": seed,
        "seed_chosen": 0 <= seed < CHOSEN_SEED_LIMIT,
    }


def generators_before_seeding(torch: Any, seeded_earlier: int | None) -> dict[str, Any]:
    """Whether torch's, numpy's and Python's global generators had been drawn from when they are
    about to be seeded, and from which seed state. ``seeded_earlier``: the seed an earlier
    ``mfp.seed_everything`` in this process set (numpy's and Python's states do not hold their
    seed; where nobody here seeded them, the state drawn from is not known)."""
    out: dict[str, Any] = {}
    from_state = (
        {"seed": seeded_earlier, "seed_chosen": True}
        if seeded_earlier is not None
        else {"seed": None, "seed_chosen": None}
    )
    try:
        drawn = _python_position() != _Fresh.python
        out["python"] = {"drawn": drawn, **from_state}
    except Exception as exc:
        out["python"] = unavailable(type(exc).__name__)
    numpy = sys.modules.get("numpy")
    if numpy is not None and "numpy.random" in sys.modules:
        try:
            pos, has_gauss = _numpy_position(numpy)
            fresh = pos in _Fresh.numpy_positions(numpy) and not has_gauss
            out["numpy"] = {"drawn": not fresh, **from_state}
        except Exception as exc:
            out["numpy"] = unavailable(type(exc).__name__)
    if torch is not None:
        try:
            out["torch"] = _torch_drawn(torch)
        except Exception as exc:
            out["torch"] = unavailable(type(exc).__name__)
    return out


# -- did the training run compiled code? -------------------------------------------------------


def _backend_name(backend: Any) -> str:
    """torch.compile's wrapper of a backend names it (``compiler_name``); a backend function
    passed to ``torch._dynamo.optimize`` by its own name."""
    name = getattr(backend, "compiler_name", None) or getattr(backend, "__name__", None)
    return str(name) if name else type(backend).__name__


def _mode(backend: Any, modules: Mapping[str, Any]) -> str:
    """The ``mode`` torch.compile was given. The wrapper of a named backend keeps it; inductor's
    keeps only the options the mode set, so its mode is the largest of inductor's own modes whose
    options it holds (``default`` where it holds none of them)."""
    kwargs = getattr(backend, "kwargs", None)
    if isinstance(kwargs, Mapping):
        return str(kwargs.get("mode") or "default")
    config = getattr(backend, "config", None)
    modes = getattr(modules.get("torch._inductor"), "list_mode_options", None)
    if not isinstance(config, Mapping) or not callable(modes):
        return "default"
    held = [
        (len(options), mode)
        for mode, options in modes().items()
        if options and all(k in config and config[k] == v for k, v in options.items())
    ]
    return max(held)[1] if held else "default"


def compiled(modules: Mapping[str, Any] = sys.modules) -> dict[str, Any]:
    """Whether the process had run code ``torch.compile`` made when the first step was taken
    (``ran``: Dynamo had compiled a graph), and the ``backend`` and ``mode`` torch.compile was
    asked for (None where it never was; several, comma-separated, in name order). Compiled and
    eager kernels round differently, so this is a numerics fact of the run.

    Read only where the program imported ``torch._dynamo`` (torch.compile and the optimizers do):
    where it did not, nothing was compiled, and importing it here would cost the training
    seconds. Dynamo's counters and its table of backends are read, never written (its counters
    are a defaultdict: looked up with ``get``). Both are the process's: a compiled training
    earlier in the same process shows here too, and a callback that records before the first
    forward (Lightning's) sees ``ran`` false with the backend already asked for."""
    if "torch._dynamo" not in modules:
        return {"ran": False, "backend": None, "mode": None}
    utils = modules.get("torch._dynamo.utils")
    frames = modules.get("torch._dynamo.eval_frame")
    counters = getattr(utils, "counters", None)
    backends = getattr(frames, "cached_backends", None)
    if not isinstance(counters, Mapping) or not isinstance(backends, Mapping):
        return unavailable("this torch._dynamo has no counters or backend table")
    graphs = int((counters.get("stats") or {}).get("unique_graphs", 0))
    asked = sorted(
        {(_backend_name(b), _mode(b, modules)) for b in list(backends.values()) if callable(b)}
    )
    return {
        "ran": graphs > 0,
        "backend": ", ".join(name for name, _ in asked) or None,
        "mode": ", ".join(mode for _, mode in asked) or None,
    }


# What the first step reads of the process beside the weights, the batch and the generators, by
# field name: each read once at the step (``run/first_step.py``), a failure recorded as
# ``unavailable``. A new such field is one entry here and its reader above.
AT_STEP: Mapping[str, Callable[[], Any]] = MappingProxyType({"compiled": compiled})


def probe(ctx: Any) -> dict[str, Any]:
    """The section: what the run wrapper (or a callback) measured at the first step, and the
    generators as the wrapper found them when it seeded (None: it did not seed)."""
    run = ctx.run
    first = dict(run.first_step_record) if run.first_step_record is not None else {}
    not_yet = None  # no step yet when this capture was taken
    return {
        "recorded_by": first.get("recorded_by"),
        "weights": first.get("weights", not_yet),
        "batch": first.get("batch", not_yet),
        "before_seeding": dict(run.before_seeding) if run.before_seeding is not None else None,
        # of the optimizer's parameters, how many a module registered after the seed was set
        "made_after_seeding": first.get("made_after_seeding"),
        "generators_at_first_step": first.get("generators"),
        **{name: first.get(name, not_yet) for name in AT_STEP},
    }
