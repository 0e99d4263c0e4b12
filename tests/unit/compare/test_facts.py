"""Facts about one record that decide whether a field can matter (``compare/facts.py``), on real
captured records, and read defensively: what a record lacks answers "unknown", never raises."""

from __future__ import annotations

import pytest

from mlflow_fingerprint.compare import facts
from support.records import cpu_record, gpu_record, seeded


@pytest.mark.parametrize(
    ("machine", "gpu", "tf32"),
    [("cpu", False, False), ("a100", True, True), ("t4", True, False)],
)
def test_which_runs_had_a_gpu_that_does_tf32(machine: str, gpu: bool, tf32: bool) -> None:
    record = cpu_record() if machine == "cpu" else gpu_record(machine)
    assert facts.has_gpu(record) is gpu
    assert facts.gpu_run(record) is gpu
    assert facts.tf32_capable(record) is tf32


def test_the_seed_a_run_trained_from_and_whether_it_was_seeded() -> None:
    assert (facts.seeded(cpu_record()), facts.trained_seed(cpu_record())) == (False, None)
    four = seeded(cpu_record(), 4)
    assert (facts.seeded(four), facts.trained_seed(four)) == (True, 4)


def test_versions_and_capabilities_are_parsed_and_what_is_missing_is_unknown() -> None:
    assert facts.parse_version("2.5.1+cu121") == (2, 5, 1)
    assert facts.parse_version("not a version") is None
    assert facts.parse_version(None) is None
    assert facts.compute_capability({"compute_capability": "8.0"}) == (8, 0)
    assert facts.torch_version({"torch": {"version": "unavailable"}}) is None
    assert facts.tf32_capable({}) is False
    assert facts.has_gpu({}) is False
