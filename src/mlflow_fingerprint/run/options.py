"""``FingerprintOptions``: the keyword arguments of ``fingerprinted``, held apart from the
decorator because every part of a run reads them (its preparation, its start in MLflow, its end,
its closing line) and none of those parts may import the decorator that builds them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..limits import check_count, check_seconds
from ..model.vocabulary import MetricsMode
from . import ranks
from .seeding import check_seed, determinism_mode

# A declared batch size or worker count past this is a typo, not a recipe.
MAX_DECLARED = 2**31 - 1


@dataclass(frozen=True)
class FingerprintOptions:
    """The keyword arguments of ``fingerprinted``; validated when the decorator is built, so a bad
    argument fails before training rather than in the middle of it."""

    experiment: str | None = None
    run_name: str | None = None
    seed: int | None = None
    deterministic: bool | str = False
    tracking_uri: str | None = None
    tags: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    batch_size: int | None = None
    num_workers: int | None = None
    nested: bool | None = None
    start_timeout_s: float | None = None
    flush_timeout_s: float = 30.0
    metrics: MetricsMode = "rank0"
    quiet: bool = False
    # ``options=``: the program's options as it hands them over (``capture.options.from_value``)
    program_options: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        # frozen copies: a caller's dict changed after the decorator is built changes no run
        object.__setattr__(self, "tags", MappingProxyType(dict(self.tags)))
        if self.program_options is not None:
            object.__setattr__(
                self, "program_options", MappingProxyType(dict(self.program_options))
            )
        determinism_mode(self.deterministic)
        ranks.metric_mode(self.metrics)
        if self.seed is not None:
            check_seed(self.seed)
        if self.start_timeout_s is not None:
            check_seconds("start_timeout_s", self.start_timeout_s, zero=True)
        check_seconds("flush_timeout_s", self.flush_timeout_s, zero=True)
        for name, count in (("batch_size", self.batch_size), ("num_workers", self.num_workers)):
            if count is not None:
                check_count(name, count, 0, MAX_DECLARED)
