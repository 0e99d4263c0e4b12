"""``diff(a, b)``: fingerprints first, then metrics, then the verdict (docs/design.md, Comparator).

The fingerprint diff explains; the metric comparison says whether there is anything to explain.
Only MLflow runs have metrics; a fingerprint file compares fields only (verdict ``no_metrics``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..model.fields import (
    GIT_COMMIT,
    GIT_DIFF_DIGEST,
    PROGRAM_ARGV,
    PROGRAM_ENTRY_SHA256,
    PROGRAM_SOURCES,
)
from ..model.fingerprint import get_path
from ..model.vocabulary import Verdict
from . import bisect_ready
from .changes import flat, group, mark_unknown_options
from .curves import enablers_left, late_divergence, ruled_out_note, set_aside
from .enablers import find_enablers
from .fields import field_changes
from .partial import summary_record
from .ranking import rank
from .report import Difference, Enabler, MetricComparison, Report, within_noise
from .resolve import Resolved, resolve
from .settable import split
from .step_zero import reason
from .summary import Logged, shared_summaries
from .where import locate

UNEXPLAINED_NOTE = (
    "Nothing recorded differs in a way that fits these curves, and nothing both runs allowed "
    "can vary them: the cause is outside the fingerprint (an environment variable the program "
    "reads, a data file, code outside the project)."
)


def noise_note(metrics: Sequence[MetricComparison], differences: Sequence[Difference]) -> str:
    """Why differences that exist are not offered as the cause: replicates vary as much."""
    spread = max((m.spread for m in metrics if m.spread is not None), key=lambda s: s.runs)
    effective = [d.field for d in differences if d.effect != "none"]
    named = (
        f"so {', '.join(effective)} {'is' if len(effective) == 1 else 'are'} not shown to have "
        "changed them"
        if effective
        else "so nothing recorded is needed to explain them"
    )
    seeds = (
        f"all seeded with {spread.seed} like A and B; only enablers' draws differ"
        if spread.seed is not None
        else "of different seeds; only seeds and enablers' draws differ"
    )
    return (
        f"The metrics differ by no more than {spread.runs} replicate runs of the same recipe "
        f"differ from each other (same recipe, env and numerics; {seeds}): run-to-run "
        f"variation does as much, {named}."
    )


def verdict_of(
    metrics: Sequence[MetricComparison],
    differences: Sequence[Difference],
    enablers: Sequence[Enabler],
) -> Verdict:
    if not metrics:
        return "no_metrics"
    if all(m.equal for m in metrics):
        return "same_results"
    if any(d.effect != "none" for d in differences):
        return "explained"
    return "nondeterministic" if enablers else "unexplained"


def shared_metric_names(a: Resolved, b: Resolved, only: Sequence[str] | None) -> list[str]:
    names = sorted(set(a.metrics) & set(b.metrics))
    return [n for n in names if n in set(only)] if only else names


def compare_metrics(
    a: Resolved, b: Resolved, names: Sequence[str], atol: float, rtol: float
) -> tuple[tuple[MetricComparison, ...], tuple[str, ...], bool]:
    """Histories of ``names`` in both runs, compared; notes on replicate runs; and whether A and
    B are replicates of each other (records equal but for seeds and enablers' draws)."""
    from ..tracking import history
    from ..tracking import store as tracking
    from . import replicates
    from .metrics import compare

    uri = a.tracking_uri or tracking.effective_uri(None)
    mlflow_client = tracking.reader(uri)
    results: list[MetricComparison] = []
    logged_a, logged_b = {}, {}
    for name in names:  # one metric's two histories in memory at a time
        with tracking.store_errors(uri):
            (ha,) = history.fetch(mlflow_client, uri, str(a.ref.run_id), [name]).values()
            (hb,) = history.fetch(mlflow_client, uri, str(b.ref.run_id), [name]).values()
        results.append(compare(name, ha, hb, atol, rtol))
        logged_a[name], logged_b[name] = Logged.of(ha), Logged.of(hb)
    results = as_summaries(results, shared_summaries(logged_a, logged_b))
    if all(m.equal for m in results):
        return tuple(results), (), False
    with tracking.store_errors(uri):
        found, note, same_recipe = replicates.spreads(mlflow_client, uri, a, b, results)
    results = [
        dataclasses.replace(
            m, spread=found.get(m.name), no_band=not m.equal and m.name not in found
        )
        for m in results
    ]
    results, where_notes = locate_divergences(mlflow_client, uri, a, b, results)
    return tuple(results), tuple(n for n in (note, *where_notes) if n), same_recipe


def as_summaries(
    results: Sequence[MetricComparison], summaries: frozenset[str]
) -> list[MetricComparison]:
    """The metrics in ``summaries`` marked as such: equal or not, they part at no step."""
    return [
        dataclasses.replace(m, summary=True, first_divergence_step=None)
        if m.name in summaries
        else m
        for m in results
    ]


def locate_divergences(
    mlflow_client: Any, uri: str, a: Resolved, b: Resolved, results: Sequence[MetricComparison]
) -> tuple[list[MetricComparison], tuple[str, ...]]:
    """Each curve that parts, given the first tensor that differs where both runs watched their
    model (``mfp.watch``); a final value (one logged step) is not a curve."""
    from ..tracking import numerics_steps

    curves = [
        m for m in results if m.first_divergence_step is not None and min(m.steps_a, m.steps_b) > 1
    ]
    if not curves:
        return list(results), ()
    watched_a, note_a = numerics_steps.read(mlflow_client, uri, str(a.ref.run_id), "A")
    watched_b, note_b = numerics_steps.read(mlflow_client, uri, str(b.ref.run_id), "B")
    notes = [n for n in (note_a, note_b) if n]
    if not watched_a or not watched_b:
        if watched_a or watched_b:
            notes.append(f"only run {'A' if watched_a else 'B'} watched its model (mfp.watch)")
        return list(results), tuple(notes)
    out = []
    for m in results:
        if m in curves:
            found, note = locate(watched_a, watched_b, int(m.first_divergence_step or 0))
            m = dataclasses.replace(m, where=found)
            if note:
                notes.append(f"{m.name}: {note}")
        out.append(m)
    return out, tuple(notes)


CODE_FIELDS = (GIT_COMMIT, GIT_DIFF_DIGEST, PROGRAM_SOURCES, PROGRAM_ENTRY_SHA256)


def bisect_hint(
    a: Resolved, b: Resolved, verdict: Verdict, differences: Sequence[Difference]
) -> str | None:
    """The command that settles which difference moved the numbers, where one can: two runs
    with curves that part, a recorded program, and something a rerun can set; where the
    command would fail here (``bisect_ready``), the one line saying what is missing."""
    if verdict not in ("explained", "nondeterministic") or not (a.is_run and b.is_run):
        return None
    if not all(get_path(r.record, PROGRAM_ARGV) for r in (a, b)):
        return None
    settable = split(flat(differences)).knobs or any(
        d.field.startswith(CODE_FIELDS) and d.effect != "none" for d in differences
    )
    if verdict == "explained" and not settable:
        return None
    blocked = bisect_ready.missing((a, b))
    if blocked is not None and not bisect_ready.placed(blocked):
        return blocked
    where = blocked or "run it in the runs' repository"
    return (
        f"a controlled rerun can prove which of these moved the numbers ({where}): "
        f"fingerprint bisect {a.ref.run_id} {b.ref.run_id}"
    )


def diff(
    a: Any,
    b: Any,
    *,
    tracking_uri: str | None = None,
    experiment: str | None = None,
    atol: float = 0.0,
    rtol: float = 0.0,
    metrics: Sequence[str] | None = None,
) -> Report:
    """Explain why ``a`` and ``b`` differ.

    ``a`` and ``b`` are MLflow run ids, ``runs:/<id>``, run names (with ``experiment``),
    fingerprint JSON paths, ``Fingerprint`` objects or record dicts. ``atol``/``rtol`` set when two
    metric values agree (exact by default); ``metrics`` limits the metrics compared.
    Raises ``ResolveError`` (a ``FingerprintError``) on a reference that leads to no fingerprint.
    """
    if atol < 0 or rtol < 0:
        raise ValueError("atol and rtol must be >= 0")
    ra = resolve(a, tracking_uri=tracking_uri, experiment=experiment, label="A")
    rb = resolve(b, tracking_uri=tracking_uri, experiment=experiment, label="B")
    if ra.partial or rb.partial:  # compare both on what tags hold: the same words on each side
        ra, rb = (
            r if r.partial else dataclasses.replace(r, record=summary_record(r.record))
            for r in (ra, rb)
        )
    changes = mark_unknown_options(field_changes(ra.record, rb.record), ra.record, rb.record)
    differences = group(rank(changes, ra.record, rb.record))
    enablers = find_enablers(ra.record, rb.record)
    notes = [*ra.notes, *rb.notes]
    compared: tuple[MetricComparison, ...] = ()
    same_recipe = False
    if ra.is_run and rb.is_run:
        names = shared_metric_names(ra, rb, metrics)
        if names:
            compared, metric_notes, same_recipe = compare_metrics(ra, rb, names, atol, rtol)
            notes.extend(metric_notes)
        else:
            notes.append("the runs share no metric" + (" of those named" if metrics else ""))
    else:
        notes.append("only MLflow runs carry metrics; fingerprint fields compared only")
    step_zero = reason(ra.record, rb.record, differences, enablers, compared)
    differences, enablers = step_zero.differences, step_zero.enablers
    notes.extend(step_zero.notes)
    possible = [d for d in differences if d.field not in step_zero.ruled]
    verdict = verdict_of(
        compared, possible, enablers_left(enablers) if step_zero.ruled else enablers
    )
    late = late_divergence(compared, atol, rtol)
    if late is not None:
        differences, ruled = set_aside(differences, *late)
        possible = [d for d in differences if d.field not in ruled]
        verdict = verdict_of(compared, possible, enablers_left(enablers))
        if verdict == "unexplained":
            notes.append(ruled_out_note(*late))
    # Within the noise of replicates, what differs is not shown to matter; unless A and B are
    # replicates of one recipe, or something differing changes the random streams (a seed, a
    # generator): such a change moves the numbers by just that noise, and is their cause.
    random_change = any(d.effect == "randomness" for d in flat(differences))
    noise = within_noise(compared) and not same_recipe and not random_change
    if noise:
        verdict = "nondeterministic"
        notes.append(noise_note(compared, differences))
    if verdict == "unexplained":
        notes.append(UNEXPLAINED_NOTE)
    hint = bisect_hint(ra, rb, verdict, differences)
    if hint:
        notes.append(hint)
    return Report(
        verdict=verdict,
        a=ra.ref,
        b=rb.ref,
        differences=differences,
        enablers=enablers,
        metrics=compared,
        notes=tuple(notes),
        atol=atol,
        rtol=rtol,
        within_noise=noise,
    )
