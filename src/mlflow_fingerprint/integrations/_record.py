"""What both callbacks do once they know the run and the trainer's settings: capture with those
settings and hand the fingerprint to that run's spool writer (tags, params, artifacts).

The run was created by the trainer's own MLflow integration, whose ``resolve_tags`` call already
gave it the context provider's start-of-run tags and queued its start fingerprint; that pending
fingerprint is replaced here, so it cannot land after (and overwrite) the fuller one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..capture import RunInfo, capture
from ..fingerprint import Fingerprint
from ..redact import secret_env_values
from ..run import tags as tagging
from ..run.loaders import describe


def loader_records(*loaders: Any) -> tuple[dict[str, Any], ...]:
    """``data.loaders`` entries for the loaders given (None and non-loaders skipped)."""
    out = []
    for loader in loaders:
        if loader is None or not hasattr(loader, "batch_size"):
            continue
        try:
            out.append(describe(loader))
        except Exception:  # a custom loader we cannot read: the declared values stand in
            continue
    return tuple(out)


def capture_for_trainer(
    *,
    seed: int | None,
    seeded_by: str,
    declared: Mapping[str, Any],
    deterministic: Any,
    loaders: tuple[dict[str, Any], ...] = (),
    stage: str = "train_start",
) -> Fingerprint:
    return capture(
        run=RunInfo(
            requested_seed=seed,
            seeded_by=seeded_by if seed is not None else None,
            loaders=loaders,
            declared={k: v for k, v in declared.items() if v is not None},
            deterministic=deterministic,
            stage=stage,
        )
    )


def replace_provider_pending(spool_id: str | None, fp: Fingerprint) -> None:
    """Make the context provider's queued start fingerprint for the run tagged ``spool_id`` this
    fuller one, so whichever of the two writes lands last, the run ends up with ``fp``."""
    if not spool_id:
        return
    from ..run import context_provider as provider

    with provider._lock:
        for pending in provider._pending:
            if pending.spool_id == spool_id:
                pending.fingerprint = fp


def record_into_run(
    run_id: str, uri: str, fp: Fingerprint, extra_tags: Mapping[str, Any] | None = None
) -> Any:
    """Queue ``fp``'s tags, params and artifacts for run ``run_id``; returns the run's writer
    (``writer.flush(timeout)`` waits until MLflow has them)."""
    from ..run.metrics import writer_for_run

    secrets = secret_env_values()
    writer = writer_for_run(run_id, uri)
    tags = {**tagging.fingerprint_tags(fp, secrets), **tagging.safe_tags(extra_tags or {}, secrets)}
    writer.record({"e": "tags", "tags": tags})
    writer.record({"e": "params", "params": tagging.run_params(fp, secrets)})
    writer.record(*tagging.fingerprint_artifact(fp, secrets))
    for record, data in tagging.side_artifacts(fp, secrets):
        writer.record(record, data)
    return writer
