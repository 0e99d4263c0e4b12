"""The domain words the package passes around, each a ``Literal`` and the tuple of its values.

Literals rather than enums: the JSON contract, the tags and the renderers carry exactly these
strings, and a ``str`` that *is* the word needs no conversion at any of those edges. A type checker
catches a misspelt word where it is written; :func:`check` catches it at run time where a value
enters a record (``Rule``, ``Difference``, ``Report``, ``Finding``, the wrapper's options), so a
typo in a rule table fails when its module is imported, not in the middle of a diff.

The words:

- ``Effect``: what a field difference can do to the numbers (docs/design.md, Comparator):
  ``recipe`` a different training procedure; ``randomness`` a different random stream;
  ``numerics`` the same math through other kernels, reduction order or precision; ``none``
  recorded, but it does not change results.
- ``Verdict``: what a diff concludes from the metrics and the differences.
- ``MetricsMode``: what ``log_metrics`` does on the ranks of a distributed job.
- ``Severity``: how badly an audit finding threatens reproducibility.
- ``RefKind``: what a user's reference to a run resolved to.
- ``OutputFormat``: what ``fingerprint diff --format`` renders a report as.
- ``BisectVerdict``: what ``fingerprint bisect`` concludes; ``Match``: whose curve a rerun of
  run A followed (``a``, ``b`` or ``neither``).
- ``Coverage``: how much of a run ``explain`` could read: its whole fingerprint (``full``), the
  summary its ``fingerprint.*`` tags hold (``tags``), or only the params it logged (``params``).
- ``FactorVerdict``: what ``explain`` concludes of a field (or block): ``important`` (it moves the
  metric beyond the noise floor), ``ruled_out`` (the runs show it moves the metric by little at
  most) or ``undecided`` (neither: too few runs, or too much noise, to say).
- ``FactorKind``: a field's (or block's) own effect (``main``) or the interaction of two.
- ``Phase``: where inside a training step ``mfp.watch`` recorded a tensor: a module's
  ``forward`` output (or input), a parameter's gradient after ``backward``, or a parameter after
  the ``optimizer`` step.
- ``BandKind``: what a diff's noise band measures: ``same_seed`` reruns at the seed A and B
  share (run-to-run noise, often exactly zero on a CPU), ``across_seeds`` the spread between
  runs of different seeds (for a pair whose seeds differ or are unknown).
"""

from __future__ import annotations

from typing import Literal, TypeVar, get_args

Effect = Literal["recipe", "randomness", "numerics", "none"]
EFFECTS: tuple[Effect, ...] = get_args(Effect)

Verdict = Literal["same_results", "explained", "nondeterministic", "unexplained", "no_metrics"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)

MetricsMode = Literal["rank0", "per_rank", "mean"]
METRICS_MODES: tuple[MetricsMode, ...] = get_args(MetricsMode)

Severity = Literal["high", "medium", "low"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)

RefKind = Literal["run", "file", "object"]
REF_KINDS: tuple[RefKind, ...] = get_args(RefKind)

OutputFormat = Literal["text", "json", "markdown", "html"]
OUTPUT_FORMATS: tuple[OutputFormat, ...] = get_args(OutputFormat)

BisectVerdict = Literal["proven", "not_settable", "nondeterministic", "not_reproducible"]
BISECT_VERDICTS: tuple[BisectVerdict, ...] = get_args(BisectVerdict)

Match = Literal["a", "b", "neither"]
MATCHES: tuple[Match, ...] = get_args(Match)

Coverage = Literal["full", "tags", "params"]
COVERAGES: tuple[Coverage, ...] = get_args(Coverage)

FactorVerdict = Literal["important", "ruled_out", "undecided"]
FACTOR_VERDICTS: tuple[FactorVerdict, ...] = get_args(FactorVerdict)

FactorKind = Literal["main", "interaction"]
FACTOR_KINDS: tuple[FactorKind, ...] = get_args(FactorKind)

Phase = Literal["forward", "backward", "optimizer"]
PHASES: tuple[Phase, ...] = get_args(Phase)

# What a noise band measures: reruns at the pair's own seed, or the spread between seeds.
BandKind = Literal["same_seed", "across_seeds"]
BAND_KINDS: tuple[BandKind, ...] = get_args(BandKind)

Word = TypeVar("Word", bound=str)


def check(value: object, allowed: tuple[Word, ...], what: str) -> Word:
    """``value`` if it is one of ``allowed``; else a ValueError naming the word and the choices.

    ValueError, not FingerprintError: a wrong word is a bug in the package (or in a caller's
    argument), not a record a user handed in."""
    if isinstance(value, str) and value in allowed:
        return value
    raise ValueError(f"unknown {what} {value!r}: expected one of {', '.join(allowed)}")
