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
from typing import Any

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
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        digests["numpy"] = safe(lambda: _numpy_state_digest(numpy))
    if torch is not None:
        digests["torch_cpu"] = safe(lambda: _sha(torch.get_rng_state().numpy().tobytes()))
        if safe(torch.cuda.is_initialized) is True:
            digests["torch_cuda"] = safe(
                lambda: _sha(b"".join(s.numpy().tobytes() for s in torch.cuda.get_rng_state_all()))
            )
    return digests


def probe(ctx: ProbeContext) -> dict[str, Any]:
    run = ctx.run
    torch = ctx.torch
    section: dict[str, Any] = {
        "requested": run.requested_seed,
        "seeded_by": run.seeded_by,
        "pythonhashseed": os.environ.get("PYTHONHASHSEED"),
        "hash_randomization": bool(sys.flags.hash_randomization),
        "torch_initial_seed": (
            safe(torch.initial_seed)
            if torch is not None
            else unavailable(ctx.torch_error or "torch is not installed")
        ),
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
