"""What both callbacks do once they know the run and the trainer's settings: capture with those
settings and hand the fingerprint to that run's spool writer (tags, params, artifacts).

The run was created by the trainer's own MLflow integration, whose ``resolve_tags`` call already
gave it the context provider's start-of-run tags and queued its start fingerprint; that pending
fingerprint is replaced here, so it cannot land after (and overwrite) the fuller one.

In a distributed job (the trainer set up the process group) every rank captures and joins the
gather in the same hook; rank 0 records the merged fingerprint, the job tags and every rank's
fingerprint into the one run, as the ``fingerprinted`` wrapper does. Other ranks never touch MLflow.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ..capture import RunInfo, capture
from ..capture.context import DeterminismRequest
from ..errors import FingerprintWarning
from ..model.fields import DISTRIBUTED_RANK
from ..model.fingerprint import Fingerprint
from ..redact import secret_env_values
from ..run import publish, ranks
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


# The switch each integration's ``deterministic`` value comes from, by its ``seeded_by`` name.
DETERMINISM_SWITCHES = {
    "lightning.seed_everything": "lightning.Trainer(deterministic)",
    "transformers.Trainer": "transformers.TrainingArguments(full_determinism)",
}


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
            deterministic=DeterminismRequest.of(
                deterministic, DETERMINISM_SWITCHES.get(seeded_by, seeded_by)
            ),
            stage=stage,
        )
    )


def take_over_from_provider(spool_id: str | None) -> None:
    """The callback records the run whole from now on: the context provider's queued start
    fingerprint for the run tagged ``spool_id`` is dropped (see ``context_provider.take_over``),
    so the first step the callback adds later is not overwritten by it."""
    if spool_id:
        from ..run import context_provider

        context_provider.take_over(spool_id)


def job_fingerprint(fp: Fingerprint) -> tuple[Fingerprint, list[dict[str, Any]]] | None:
    """What this process records: ``(fp, [])`` in a single process; in a distributed job, rank 0
    gets ``fp`` merged with every rank's fingerprint and those fingerprints, the other ranks None.

    A collective in a job: every rank calls it in the same hook. The group is the trainer's (never
    initialised here). A failed gather (a dead rank shows as the side group's timeout) warns and
    leaves rank 0 recording its own fingerprint: recording must never stop training."""
    try:
        group = ranks.RankGroup.current(initialise=False)
        if group is None:
            return fp, []
        job = ranks.gather_merged(group, fp)
    except Exception as exc:
        warnings.warn(
            f"mlflow-fingerprint: could not gather the ranks' fingerprints: "
            f"{type(exc).__name__}: {exc}",
            FingerprintWarning,
            stacklevel=2,
        )
        return (fp, []) if fp.get(DISTRIBUTED_RANK) == 0 else None
    if job is not None:
        ranks.warn_if_heterogeneous(job[0])
    return job


def record_into_run(
    run_id: str,
    uri: str,
    fp: Fingerprint,
    extra_tags: Mapping[str, Any] | None = None,
    rank_records: Sequence[Mapping[str, Any]] = (),
) -> Any:
    """Queue ``fp``'s tags (with the job tags of a merged one), params and artifacts for run
    ``run_id``, and ``rank_records`` as ``fingerprint/ranks/rank-<i>.json``; returns the run's
    writer (``writer.flush(timeout)`` waits until MLflow has them)."""
    items = publish.whole(fp, secret_env_values(), extra_tags, rank_records)
    return publish.to_run(run_id, uri, items)


def with_first_step(fp: Fingerprint, record: Mapping[str, Any]) -> Fingerprint:
    """``fp`` with what a callback measured at the fit's first batch as its ``first_step``
    section (which enters no hash: the tags stay as they are)."""
    whole = fp.to_dict()
    section = dict(whole.get("first_step") or {})
    section.update(record)
    whole["first_step"] = section
    return Fingerprint.from_dict(whole)


def republish(writer: Any, fp: Fingerprint) -> None:
    """Replace the run's ``fingerprint/fingerprint.json`` with ``fp`` (its tags are unchanged)."""
    if writer is not None:
        items = publish.fingerprint_items(fp, secret_env_values(), tags=False, side=False)
        publish.to_writer(writer, items)


def announce_end(writer: Any) -> None:
    """At the end of the trainer's fit, what a decorated run prints and starts at its end: the
    closing line with the command that shows this run best now, and its description
    (``run/announce.py``; off with MLFLOW_FINGERPRINT_QUIET=1 / MLFLOW_FINGERPRINT_DESCRIBE=0).
    Never a failure of the fit: a store that cannot answer only costs the line."""
    if writer is None:
        return
    from ..run.announce import announce
    from ..run.options import FingerprintOptions

    try:
        announce(writer, FingerprintOptions())
    except Exception:  # the run is stored; the line is a courtesy
        return


def watch(writer: Any, model: Any, request: bool | tuple[int, ...]) -> Any:
    """``mfp.watch`` of the trainer's model into the callback's run, as its ``watch=`` asks:
    True the default steps, a tuple those steps; None where it asks for nothing."""
    if request is False:
        return None
    from ..run.watch import watch_into

    return watch_into(writer, model, None if request is True else request)
