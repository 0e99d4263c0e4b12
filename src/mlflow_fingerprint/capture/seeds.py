"""What the random number generators hold, and the DataLoaders the run wrapper saw.

Seeds cannot be read back from RNG states (numpy's and python's states do not hold the seed), so
we record the seed the wrapper applied and ``torch.initial_seed()`` (which does not move as numbers
are drawn), plus state digests. Digests are a sound "same stream" test only at a fixed program
point, so they are kept out of the hashes: see ``hashing.VOLATILE``.
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
from typing import Any, Literal

from ..model.fingerprint import unavailable
from ..torch_import import imported_by_program
from .context import ProbeContext
from .reading import safe


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _numpy_state_digest(numpy: Any) -> str:
    kind, keys, pos, has_gauss, cached = numpy.random.get_state(legacy=True)
    return _sha(keys.tobytes() + repr((kind, pos, has_gauss, cached)).encode())


def rng_state_digests(torch: Any = None) -> dict[str, Any]:
    """Digests of every global RNG's full state; CUDA's only if CUDA is already initialised."""
    digests: dict[str, Any] = {"python": safe(lambda: _sha(repr(random.getstate()).encode()))}
    # numpy's global generator exists once ``numpy.random`` is imported (numpy 2 imports it on
    # first use); before that the program has drawn nothing from it, and importing it here took
    # up to 80 ms of this probe's first call. Read as where numpy is not imported.
    numpy = sys.modules.get("numpy")
    if numpy is not None and "numpy.random" in sys.modules:
        digests["numpy"] = safe(lambda: _numpy_state_digest(numpy))
    if torch is not None:
        digests["torch_cpu"] = safe(lambda: _sha(torch.get_rng_state().numpy().tobytes()))
        if safe(torch.cuda.is_initialized) is True:
            digests["torch_cuda"] = safe(
                lambda: _sha(b"".join(s.numpy().tobytes() for s in torch.cuda.get_rng_state_all()))
            )
    return digests


# torch seeds its default generator from the OS when it starts: a uniformly drawn 64-bit number
# (a fresh process reports e.g. 14832843997580184315 on torch 2.13). ``manual_seed(s)`` makes
# ``initial_seed()`` return s, and the seeds people choose (0, 1, 42, a date) are far below 2**32,
# where a drawn seed lands once in four billion processes.
CHOSEN_SEED_LIMIT = 2**32

SeedOrigin = Literal["decorator", "program", "unseeded"]


def seed_origin(requested: Any, seeded_by: Any, initial_seed: Any) -> SeedOrigin | None:
    """Who seeded torch: the decorator (``seeded_by``, and torch still holds its seed), the
    program itself (torch holds a chosen-looking seed the decorator did not set), or nobody
    (torch holds the seed it drew). None where torch's seed cannot be read and nobody seeded."""
    if not isinstance(initial_seed, int) or isinstance(initial_seed, bool):
        return "decorator" if seeded_by else None
    if seeded_by and initial_seed == requested:
        return "decorator"
    if 0 <= initial_seed < CHOSEN_SEED_LIMIT:
        return "program"
    return "unseeded"


def first_step_seeds(stage: str, torch: Any) -> dict[str, Any]:
    """What the RNGs hold when training starts (``stage``: the first DataLoader iterator is
    created, or the first metric is logged), read on the training thread: after the program's
    own seeding, wherever it seeds, so a program that calls ``torch.manual_seed(0)`` itself and a
    run the decorator seeded with 0 show the same seed. A few microseconds: one seed and three
    state digests."""
    return {
        "stage": stage,
        "torch_initial_seed": safe(torch.initial_seed) if torch is not None else None,
        "state_digests": rng_state_digests(torch),
    }


def trained_seed(first_step: Any, initial_seed: Any) -> Any:
    """torch's seed when training started where it was read then, else as read now."""
    if isinstance(first_step, dict):
        seed = first_step.get("torch_initial_seed")
        if isinstance(seed, int) and not isinstance(seed, bool):
            return seed
    return initial_seed


def probe(ctx: ProbeContext) -> dict[str, Any]:
    run = ctx.run
    torch = ctx.torch
    initial_seed = (
        safe(torch.initial_seed)
        if torch is not None
        else unavailable(ctx.torch_error or "torch is not installed")
    )
    first_step = dict(run.first_step) if run.first_step is not None else None
    seed = trained_seed(first_step, initial_seed)
    section: dict[str, Any] = {
        "requested": run.requested_seed,
        "seeded_by": run.seeded_by,
        "pythonhashseed": os.environ.get("PYTHONHASHSEED"),
        "hash_randomization": bool(sys.flags.hash_randomization),
        "torch_initial_seed": initial_seed,
        "origin": seed_origin(run.requested_seed, run.seeded_by, seed)
        or unavailable("torch's seed could not be read"),
        # Read on the training thread when it started (None: not started when captured).
        "at_first_step": first_step,
        # Volatile: whether torch's own seed could feed anything (a Keras program's capture may
        # be the only importer of torch).
        "torch_imported_by_program": imported_by_program(),
        "state_digests": dict(run.seed_state_digests)
        if run.seed_state_digests
        else rng_state_digests(torch),
        "captured_at_stage": "after_seed" if run.seed_state_digests else run.stage,
    }
    return section


def probe_data(ctx: ProbeContext) -> dict[str, Any]:
    """DataLoaders are only known inside a run; outside one this section is empty, not missing."""
    run = ctx.run
    return {
        "loaders": [dict(loader) for loader in run.loaders],
        "declared": dict(run.declared),
        "captured_at_stage": run.stage,
    }
