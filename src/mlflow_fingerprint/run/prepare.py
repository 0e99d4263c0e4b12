"""What a run does to the process before it records anything, and undoes when it ends: a
controlled rerun's forced values (``apply``), seeding, the determinism switches, and the recorder
that watches the DataLoaders. Kept apart from the run's recording so that what is changed in the
process and what puts it back stand side by side."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..capture.seeds import rng_state_digests
from ..errors import BadOverride
from .apply import (
    Applied,
    LoaderOverrides,
    Overrides,
    apply_environment,
    apply_switches,
    forced_deterministic,
    forced_seed,
    overrides_from_env,
    stop_after_from_env,
)
from .first_step import FirstStepRecorder
from .loaders import LoaderRecorder
from .options import FingerprintOptions
from .seeding import Determinism, apply_determinism, optional_torch, seed_recording


@dataclass(frozen=True)
class Forced:
    """A controlled rerun's requests (``apply``): the values forced on the run, what forcing
    them changed in the process (undone at the end), and the step to stop after."""

    overrides: Overrides = field(default_factory=Overrides)
    environment: Applied = field(default_factory=Applied)
    switches: Applied = field(default_factory=Applied)
    stop_after: int | None = None

    def record(self) -> dict[str, Any]:
        return {
            "overrides": dict(self.overrides.values),
            "actions": [*self.environment.actions, *self.switches.actions],
            "stop_after": self.stop_after,
        }


@dataclass(frozen=True)
class Prepared:
    """What ``prepare`` did before recording anything: the loaders it watches, the determinism
    switches (undone at the end), the RNG state digests right after seeding, and a rerun's
    forced values; the generators as they stood before seeding, and the first step's recorder."""

    recorder: LoaderRecorder
    determinism: Determinism
    digests: dict[str, Any] | None
    forced: Forced = field(default_factory=Forced)
    before_seeding: dict[str, Any] | None = None
    first_step: FirstStepRecorder = field(default_factory=FirstStepRecorder)

    def undo(self) -> None:
        """Stop watching loaders and put the process switches back, last set first."""
        self.first_step.stop()
        self.recorder.stop()
        self.forced.switches.undo()
        self.determinism.undo()
        self.forced.environment.undo()


def rerun_requests() -> tuple[Overrides, int | None]:
    """MLFLOW_FINGERPRINT_APPLY and _STOP_AFTER; a bad value ends the program before training
    with one line on stderr (exit 2), as a bad command line would: a rerun that went on without
    its settings would train for nothing and report a comparison of the wrong thing."""
    try:
        return overrides_from_env(), stop_after_from_env()
    except BadOverride as exc:
        print(f"mlflow-fingerprint: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


def with_forced(options: FingerprintOptions, overrides: Overrides) -> FingerprintOptions:
    """The options with a rerun's forced seed and determinism, which act as the arguments would."""
    if not overrides.values:
        return options
    return replace(
        options,
        seed=forced_seed(overrides, options.seed),
        deterministic=forced_deterministic(overrides, options.deterministic),
    )


def prepare(
    options: FingerprintOptions,
    overrides: Overrides,
    stop_after: int | None,
    on_first_iter: Callable[[], None],
) -> Prepared:
    """Force a rerun's environment, seed, switch determinism, force the rerun's switches and start
    watching DataLoaders (``on_first_iter`` is called when the first one starts iterating) and
    the first optimizer step."""
    environment = apply_environment(overrides)
    digests = before = None
    if options.seed is not None:
        before = seed_recording(options.seed)
        digests = rng_state_digests(optional_torch())
    determinism = apply_determinism(options.deterministic)
    forced = Forced(overrides, environment, apply_switches(overrides), stop_after)
    adjust = LoaderOverrides(overrides).adjust if overrides.touches_loaders() else None
    recorder = LoaderRecorder(on_first_iter=on_first_iter, adjust=adjust).start()
    seeded = options.seed is not None
    first_step = FirstStepRecorder(generators=not seeded, seeded=seeded).start()
    return Prepared(recorder, determinism, digests, forced, before, first_step)
