"""The order of a report's differences (``compare/ranking.py``): recipe and randomness before
numerics before none, and a field only one run recorded after the known differences."""

from __future__ import annotations

from mlflow_fingerprint import diff
from support.records import cpu_record, edit, gpu_record
from support.reports import effect_of


def test_a_recipe_or_randomness_difference_outranks_numerics_which_outranks_none():
    record = edit(gpu_record("a100"), **{"data.declared.batch_size": 32})
    other = edit(
        record,
        **{
            "torch.threads.intra_op": 7,
            "platform.hostname": "elsewhere",
            "data.declared.batch_size": 64,
            "numerics.fp32_precision.cuda_matmul": "tf32",
        },
    )
    ranked = [(d.field, d.effect) for d in diff(record, other).differences]
    assert ranked[0] == ("data.declared.batch_size", "recipe")
    assert [e for _, e in ranked] == sorted(
        (e for _, e in ranked), key=["recipe", "numerics", "none"].index
    )
    assert ranked.index(("numerics.fp32_precision.cuda_matmul", "numerics")) < ranked.index(
        ("torch.threads.intra_op", "numerics")
    ), "TF32 on Ampere is the likelier numerics cause"


def test_a_field_only_one_run_recorded_ranks_after_known_differences():
    record = cpu_record()
    other = edit(
        record, **{"git": {"unavailable": "not a git repository"}, "data.declared.batch_size": 64}
    )
    report = diff(record, other)
    assert report.differences[0].field == "data.declared.batch_size"
    commit = effect_of(report, "git.commit")
    assert commit.effect == "recipe"
    assert commit.explanation.startswith("Only one run recorded")
