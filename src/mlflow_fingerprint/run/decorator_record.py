"""What ``fingerprinted`` itself did to a run (the seed it applied and the RNG digests after it,
its determinism switches, the values the user declared, a rerun's forced values and stop), in the
two forms it is kept: the ``RunInfo`` each capture reads (a probe cannot read back a seed or a
DataLoader), and ``fingerprint/run.json`` at the end of the run."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..capture import RunInfo
from ..capture.context import DeterminismRequest
from ..capture.options import FoundOptions
from ..redact import redact_text
from .options import FingerprintOptions
from .prepare import Forced, Prepared
from .seeding import Determinism
from .started import Started

SEEDED_BY = "mlflow_fingerprint.fingerprinted"


def run_info(
    options: FingerprintOptions,
    prep: Prepared | None,
    call: Mapping[str, Any],
    stage: str,
    program_options: FoundOptions | None = None,
    started: Started | None = None,
) -> RunInfo:
    """What a capture at ``stage`` is told: the seed, the loaders seen so far, the declared
    values, the determinism request, the decorated function's arguments, the program's options
    and, once training started, what the training thread held then."""
    o = options
    declared = {
        k: v
        for k, v in (("batch_size", o.batch_size), ("num_workers", o.num_workers))
        if v is not None
    }
    determinism = prep.determinism if prep is not None else Determinism("off", ())
    return RunInfo(
        requested_seed=o.seed,
        seeded_by=SEEDED_BY if o.seed is not None else None,
        seed_state_digests=prep.digests if prep is not None else None,
        loaders=prep.recorder.loaders() if prep is not None else (),
        declared=declared,
        deterministic=DeterminismRequest(determinism.mode, SEEDED_BY, determinism.actions),
        stage=stage,
        call=call,
        options=program_options,
        first_step=started.seeds if started is not None else None,
        thread_values=started.thread_values if started is not None else None,
        first_step_record=prep.first_step.record() if prep is not None else None,
        before_seeding=prep.before_seeding if prep is not None else None,
    )


def decorator_record(
    options: FingerprintOptions,
    prep: Prepared | None,
    captures: list[dict[str, Any]],
    stopped_at: int | None,
    secrets: set[str] | None,
) -> dict[str, Any]:
    """``fingerprint/run.json``: seeding, determinism switches, and every capture; ``secrets``
    (None where nothing was recorded) redact a rerun's forced values."""
    o = options
    determinism = prep.determinism if prep is not None else Determinism("off", ())
    return {
        "seed": {
            "requested": o.seed,
            "seeded_by": SEEDED_BY if o.seed is not None else None,
            "state_digests": prep.digests if prep is not None else None,
        },
        "deterministic": determinism.record(),
        "declared": {"batch_size": o.batch_size, "num_workers": o.num_workers},
        "captures": captures,
        "rerun": _rerun_record(prep, stopped_at, secrets),
    }


def _rerun_record(
    prep: Prepared | None, stopped_at: int | None, secrets: set[str] | None
) -> dict[str, Any]:
    """What a controlled rerun forced and where it stopped; the forced environment values
    pass the run's redaction, as the ``fingerprint.overrides`` tag does."""
    record = {
        **(prep.forced if prep is not None else Forced()).record(),
        "stopped_at": stopped_at,
    }
    if secrets is None or not record["overrides"]:
        return record
    redacted: dict[str, Any] = json.loads(redact_text(json.dumps(record), secrets))
    return redacted
