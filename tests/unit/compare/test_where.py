"""Where inside a step two runs part (``compare/where.py``): the first watched tensor that
differs, what went into it, and what is said when none can be named, on watched records as
``mfp.watch`` writes them (``model/watched.py``)."""

from __future__ import annotations

import math

from mlflow_fingerprint.compare.where import locate, rel_diff
from mlflow_fingerprint.model.watched import INPUT, TensorRecord


def tensor(
    step: int,
    phase: str,
    module: str,
    name: str,
    digest: str = "d0",
    norm: float = 1.0,
    partial: bool = False,
) -> TensorRecord:
    return TensorRecord(
        step,
        phase,
        module,
        "Linear",
        name,
        0,
        "float32",
        (2, 2),
        digest,
        norm,
        partial,  # type: ignore[arg-type]
    )


def one_step(
    step: int, *, update: str = "u0", grad: str = "g0", out: str = "o0"
) -> list[TensorRecord]:
    """A linear layer's step in execution order: input, output, gradient, update."""
    return [
        tensor(step, "forward", "fc", INPUT, "i0"),
        tensor(step, "forward", "fc", "output", out, norm=2.0),
        tensor(step, "backward", "fc", "weight", grad, norm=4.0),
        tensor(step, "optimizer", "fc", "weight", update, norm=8.0),
    ]


def test_relative_difference_of_the_norms() -> None:
    assert rel_diff(2.0, 3.0) == 0.5
    assert rel_diff(-2.0, -1.0) == 0.5
    assert rel_diff(1.0, 1.0) == 0.0
    assert rel_diff(0.0, 0.0) == 0.0
    assert rel_diff(0.0, 1.0) is None  # relative to zero: cannot be said
    assert rel_diff(None, 1.0) is None
    assert rel_diff(1.0, math.nan) is None
    assert rel_diff(math.inf, 1.0) is None


def test_the_first_differing_tensor_is_an_update_whose_gradients_are_equal() -> None:
    a = one_step(0) + one_step(1)
    b = [*one_step(0), *one_step(1)[:3], tensor(1, "optimizer", "fc", "weight", "other", 10.0)]
    where, note = locate(a, b, divergence_step=2)
    assert note is None
    assert where is not None
    assert (where.step, where.phase, where.module, where.tensor) == (1, "optimizer", "fc", "weight")
    assert (where.inputs, where.inputs_equal, where.only_in) == ("gradients", True, None)
    assert where.rel_diff == 0.25
    assert (where.norm_a, where.norm_b) == (8.0, 10.0)
    assert where.sentence() == (
        "step 1, optimizer: fc.weight (Linear) differs; the step's gradients are equal; "
        "relative difference of the norms 0.25"
    )
    # the table around it holds the rows of its phase only, each judged
    assert [(n.name, n.equal) for n in where.around] == [("fc.weight", False)]
    assert where.to_dict()["sentence"] == where.sentence()


def test_a_forward_output_whose_input_differs_too_says_so() -> None:
    a = one_step(0)
    b = [tensor(0, "forward", "fc", INPUT, "other"), *one_step(0, out="o1")[1:]]
    where, _ = locate(a, b, 0)
    assert where is not None
    # the module's input itself is the first difference: what came before it differs
    assert (where.tensor, where.inputs, where.inputs_equal) == (INPUT, None, None)
    assert "it is a module's input: what came before it differs" in where.sentence()
    where, _ = locate(a[1:], b, 0)  # A never recorded the input: the output is compared first
    assert where is not None
    assert where.tensor == "output"
    assert where.inputs_equal is None


def test_gradients_computed_from_a_differing_forward_pass() -> None:
    a = one_step(0)
    b = one_step(0, out="o1", grad="g1")
    where, _ = locate(a, b, 0)
    assert where is not None
    assert where.phase == "forward"
    assert where.inputs_equal is True
    where, _ = locate([r for r in a if r.phase != "forward"], b, 0)
    assert where is not None
    assert where.phase == "backward"
    assert where.inputs == "forward pass"
    assert where.inputs_equal is None


def test_a_tensor_only_one_run_has() -> None:
    a = one_step(0)
    b = [*one_step(0), tensor(0, "optimizer", "fc", "bias", "b0")]
    where, _ = locate(a, b, 0)
    assert where is not None
    assert where.only_in == "B"
    assert where.sentence() == "step 0, optimizer: fc.bias (Linear) is only in run B"
    where, _ = locate(b, a, 0)
    assert where is not None
    assert where.only_in == "A"
    assert where.rel_diff is None


def test_the_earliest_differing_step_up_to_the_divergence_step_is_named() -> None:
    a = one_step(0) + one_step(5) + one_step(9)
    b = one_step(0) + one_step(5, update="x") + one_step(9, update="y")
    assert locate(a, b, 9)[0].step == 5  # type: ignore[union-attr]
    where, note = locate(a, b, 4)  # step 5 is after the divergence step: not looked at
    assert where is None
    assert note is not None
    assert "step 4, where the curves part, was not watched by both runs" in note
    assert "watched by both up to it: 0" in note
    assert "steps=[4]" in note


def test_every_watched_tensor_equal_at_the_divergence_step() -> None:
    where, note = locate(one_step(3), one_step(3), 3)
    assert where is None
    assert note == (
        "every tensor mfp.watch recorded is equal up to step 3, where the curves part: "
        "the difference arises outside the watched model"
    )
    assert "(watched by both up to it: none;" in locate([], one_step(3), 3)[1]  # type: ignore[operator]


def test_a_run_that_ended_inside_the_step_is_compared_on_what_both_recorded() -> None:
    full = one_step(2)
    cut = [tensor(2, "forward", "fc", INPUT, "i0", partial=True)]
    cut.append(tensor(2, "forward", "fc", "output", "o0", 2.0, partial=True))
    # B never reached its backward pass and update: unknown there, not "only in run A"
    where, note = locate(full, cut, 2)
    assert where is None
    assert note is not None
    assert "run B ended inside step 2 (it recorded forward only)" in note
    where, note = locate(cut, full, 2)  # what B has beyond A's records, A did not reach
    assert where is None
    assert "run A ended inside step 2" in (note or "")
    # a difference in what both recorded is still named
    other = [cut[0], tensor(2, "forward", "fc", "output", "o1", 3.0, partial=True)]
    where, _ = locate(full, other, 2)
    assert where is not None
    assert where.tensor == "output"
    assert where.only_in is None
    assert where.inputs_equal is True
    assert where.rel_diff == 0.5


def test_non_finite_norms_are_null_in_the_json() -> None:
    a = [tensor(0, "optimizer", "fc", "weight", "u0", math.nan)]
    b = [tensor(0, "optimizer", "fc", "weight", "u1", 1.0)]
    where, _ = locate(a, b, 0)
    assert where is not None
    out = where.to_dict()
    assert out["norm_a"] is None
    assert out["norm_b"] == 1.0
    assert out["rel_diff"] is None
    assert out["inputs"] == "gradients"
    assert out["inputs_equal"] is None
    assert out["around"] == [
        {
            "phase": "optimizer",
            "tensor": "fc.weight",
            "type": "Linear",
            "equal": False,
            "rel_diff": None,
        }
    ]
