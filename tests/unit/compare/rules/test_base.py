"""What a rule is and which rule names a field (``compare/rules/base.py``): patterns with
wildcards, the most specific rule winning, and a rule refusing a malformed declaration."""

from __future__ import annotations

import pytest

from mlflow_fingerprint.compare import citations
from mlflow_fingerprint.compare.rules.base import Rule, matches, most_specific, parts


def rule(pattern: str, priority: int) -> Rule:
    return Rule(pattern, "numerics", "Why.", citations.TORCH, priority=priority)


@pytest.mark.parametrize(
    ("pattern", "path", "named"),
    [
        ("cuda", "cuda.cudnn_version", True),  # a field above it
        ("cuda.cudnn_version", "cuda", False),  # not a field below it
        ("gpu.devices.*.name", "gpu.devices.0.name", True),
        ("program.env.nvidia-*", "program.env.nvidia-smi", True),
        ("program.env.nvidia-*", "program.env.cuda-smi", False),
        ("gpu.devices.*.name", "gpu.devices.0.uuid", False),
    ],
)
def test_a_pattern_names_its_field_and_the_fields_below_it(
    pattern: str, path: str, named: bool
) -> None:
    assert matches(parts(pattern), parts(path)) is named


def test_the_most_specific_rule_wins_then_the_fewest_wildcards_then_the_lowest_priority() -> None:
    broad, exact, wild = (
        rule("gpu", 1),
        rule("gpu.devices.0.name", 9),
        rule("gpu.devices.*.name", 2),
    )
    assert most_specific([broad, wild, exact], "gpu.devices.0.name") is exact
    assert most_specific([broad, wild], "gpu.devices.0.name") is wild
    assert most_specific([broad, wild], "gpu.count") is broad
    first, second = rule("seeds", 3), rule("seeds", 4)
    assert most_specific([second, first], "seeds.requested") is first
    assert most_specific([wild], "cuda.version") is None


@pytest.mark.parametrize("priority", [True, 1.5])
def test_a_priority_that_is_not_an_int_is_refused(priority: object) -> None:
    with pytest.raises(ValueError, match=r"priority of rule 'torch\.x' must be an int"):
        rule("torch.x", priority)  # type: ignore[arg-type]
