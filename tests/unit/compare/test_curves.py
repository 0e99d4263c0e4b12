"""What the curves rule out: causes that act from step 0 are set aside when the curves are
identical at their first step (docs/design.md, "Verdicts never contradict the numbers")."""

from __future__ import annotations

import numpy as np

from mlflow_fingerprint.compare.curves import enablers_left, late_divergence, set_aside
from mlflow_fingerprint.compare.enablers import find_enablers
from mlflow_fingerprint.compare.metrics import compare
from mlflow_fingerprint.compare.report import Difference, Enabler
from mlflow_fingerprint.tracking.history import History
from support.records import edit, gpu_record


def history(values: list[float]) -> History:
    return History(np.arange(len(values), dtype=np.int64), np.array(values, dtype=np.float64))


def diff_of(field: str, rank: int) -> Difference:
    return Difference(field, 1, 2, "randomness", "Why.", "src", rank)


def test_curves_equal_at_step_0_set_seed_and_data_order_aside() -> None:
    loss = compare("loss", history([2.3, 2.1, 1.9]), history([2.3, 2.0, 1.7]))
    assert late_divergence([loss], 0.0, 0.0) == (0.0, 1)
    differences = (
        diff_of("seeds.torch_initial_seed", 1),
        diff_of("data.loaders.0.shuffle", 2),
        diff_of("program.options.lr", 3),
    )
    ranked, ruled = set_aside(differences, 0.0, 1)
    assert [d.field for d in ranked] == [
        "program.options.lr",
        "seeds.torch_initial_seed",
        "data.loaders.0.shuffle",
    ]
    assert [d.rank for d in ranked] == [1, 2, 3]
    assert ruled == {"seeds.torch_initial_seed", "data.loaders.0.shuffle"}
    assert ranked[1].explanation.startswith("Not the cause here: the curves are identical")


def test_curves_apart_from_step_0_rule_nothing_out() -> None:
    loss = compare("loss", history([2.3, 2.1]), history([2.2, 2.1]))
    assert late_divergence([loss], 0.0, 0.0) is None


def test_a_tolerance_rules_nothing_out() -> None:
    loss = compare("loss", history([2.3, 2.1, 1.9]), history([2.3, 2.0, 1.7]), atol=1e-9)
    assert late_divergence([loss], 1e-9, 0.0) is None


def every_enabler() -> tuple[Enabler, ...]:
    """A pair that allows every kind of variation: unseeded (and partly seeded), workers without
    a generator, salted string hashes, autotuned and atomic kernels, TF32 on an A100."""
    loader = {
        "num_workers": 2,
        "generator": {"present": False},
        "dataset": {"draws_random": True},
    }
    base = {
        "seeds.requested": None,
        "seeds.origin": "unseeded",
        "seeds.torch_initial_seed": 14832843997580184315,
        "seeds.pythonhashseed": None,
        "seeds.hash_randomization": True,
        "data.loaders": [loader],
        "determinism.cudnn_benchmark": True,
        "numerics.fp32_precision.cuda_matmul": "tf32",
    }
    record = edit(gpu_record("a100"), **base)
    found = list(find_enablers(record, record))
    first_step = {"stage": "first_loader", "torch_initial_seed": 0}
    partly = [
        edit(record, **{"seeds.at_first_step": {**first_step, "state_digests": {"numpy": n}}})
        for n in ("1", "2")
    ]
    found += find_enablers(*partly)
    return tuple(found)


def test_seed_and_worker_enablers_cannot_act_after_step_0() -> None:
    enablers = every_enabler()
    fields = {e.field for e in enablers}
    assert {"seeds.requested", "seeds.at_first_step.state_digests", "data.loaders"} <= fields
    assert {"seeds.pythonhashseed", "determinism.deterministic_algorithms"} <= fields
    left = {e.field for e in enablers_left(enablers)}
    assert "seeds.requested" not in left
    assert "seeds.at_first_step.state_digests" not in left
    assert "seeds.pythonhashseed" not in left
    assert "data.loaders" not in left
    assert "determinism.deterministic_algorithms" in left


def test_no_enabler_says_results_do_differ() -> None:
    for enabler in every_enabler():
        text = enabler.explanation.lower()
        assert "every run" not in text
        assert "draws fresh" not in text
        assert "results differ" not in text
