"""Where the facts make a rule conditional (``compare/conditions.py``): each condition on real
captured records (``support/records.py``: this CPU machine, recorded real GPUs), edited only in
the fields the condition reads. A condition returns the outcome that replaces its rule's default,
or None to keep the rule's words."""

from __future__ import annotations

from typing import Any

import pytest

from mlflow_fingerprint.compare import conditions as c
from mlflow_fingerprint.compare.fields import FieldChange
from mlflow_fingerprint.model.missing import MISSING
from support.records import cpu_record, edit, gpu_record, seeded

Record = dict[str, Any]


def ctx(a: Record, b: Record, path: str = "x", va: Any = 1, vb: Any = 2) -> c.Context:
    return c.Context(FieldChange(path, va, vb), a, b)


def effect(outcome: c.Outcome | None) -> tuple[str, int | None] | None:
    return None if outcome is None else (outcome.effect, outcome.prior)


def test_an_outcome_takes_only_the_vocabulary_s_effects() -> None:
    with pytest.raises(ValueError, match="effect"):
        c.Outcome("maybe", "why")  # type: ignore[arg-type]


def test_gpus_are_described_by_name_and_architecture() -> None:
    assert c.describe_gpus(cpu_record()) == "no GPU"
    assert c.describe_gpus(gpu_record("a100")) == "NVIDIA A100-SXM4-80GB (sm_80)"
    cpu_torch = edit(gpu_record("t4"), **{"cuda.torch_built_with": None})
    assert c.describe_gpus(cpu_torch) == "Tesla T4 (sm_75) but CPU-only torch"


def test_gpu_settings_change_nothing_where_no_gpu_computed() -> None:
    cpu, gpu = cpu_record(), gpu_record("a100")
    for condition in (c.gpu_only, c.driver):
        found = condition(ctx(cpu, cpu))
        assert found is not None
        assert found.effect == "none"
        assert condition(ctx(cpu, gpu)) is None
    assert "A: no GPU; B: no GPU" in c.gpu_only(ctx(cpu, cpu)).explanation  # type: ignore[union-attr]
    # a GPU run that ended having computed on the CPU only is no GPU run
    on_cpu = gpu_record("a100", computed_on="cpu")
    assert effect(c.gpu_only(ctx(on_cpu, cpu))) == ("none", None)


def test_tf32_matters_only_where_a_gpu_has_it_and_the_precision_got_differs() -> None:
    a100, t4, v100 = gpu_record("a100"), gpu_record("t4"), gpu_record("v100")
    neither = c.tf32(ctx(t4, v100, va="tf32", vb="ieee"))
    assert neither is not None
    assert "neither run had" in neither.explanation
    # A's A100 asked for IEEE, B's T4 asked for TF32 but has none: both computed in IEEE
    same_got = c.tf32(ctx(a100, t4, va="ieee", vb="tf32"))
    assert same_got is not None
    assert same_got.effect == "none"
    assert "both computed in ieee" in same_got.explanation
    assert c.tf32(ctx(a100, t4, va="tf32", vb="ieee")) is None  # TF32 against IEEE
    assert c.tf32(ctx(a100, a100, va="tf32", vb="ieee")) is None
    assert c.tf32(ctx(a100, t4, va=True, vb=False)) is None  # a flag, not a precision


def test_where_a_run_computed_is_said_only_where_both_are_known() -> None:
    known, unknown = gpu_record("a100"), gpu_record("a100", computed_on=None)  # type: ignore[arg-type]
    assert c.computed_on(ctx(known, known)) is None
    one = c.computed_on(ctx(known, unknown))
    assert one is not None
    assert one.effect == "none"
    assert "Where run B computed" in one.explanation
    both = c.computed_on(ctx(unknown, unknown))
    assert both is not None
    assert "Where run A and B computed" in both.explanation


def test_a_gpu_model_of_the_same_architecture_and_sm_count_is_a_weaker_cause() -> None:
    assert c.gpu_model(ctx(cpu_record(), cpu_record())) == c.Outcome("none", c.CPU_ONLY_TORCH)
    same_arch = c.gpu_model(ctx(gpu_record("h100"), gpu_record("h200")))
    assert same_arch == c.Outcome("numerics", c.SAME_ARCHITECTURE, prior=1)
    assert c.gpu_model(ctx(gpu_record("a100"), gpu_record("rtx3090"))) is None  # SM count
    assert c.gpu_model(ctx(gpu_record("a100"), cpu_record())) is None


def test_the_cublas_workspace_matters_with_determinism_on_a_gpu_before_torch_2_10() -> None:
    cpu, gpu = cpu_record(), gpu_record("a100")
    assert "neither run used one" in c.cublas_workspace(ctx(cpu, cpu)).explanation  # type: ignore[union-attr]
    assert "From torch 2.10" in c.cublas_workspace(ctx(gpu, gpu)).explanation  # type: ignore[union-attr]
    old = edit(gpu, **{"torch.version": "2.5.1+cu121"})
    off = c.cublas_workspace(ctx(old, old))
    assert off is not None
    assert "Deterministic algorithms were off" in off.explanation
    on = edit(old, **{"determinism.deterministic_algorithms": True})
    assert c.cublas_workspace(ctx(on, old)) is None


def test_warn_only_and_deterministic_algorithms_depend_on_the_runs() -> None:
    cpu, gpu = cpu_record(), gpu_record("a100")
    on = edit(cpu, **{"determinism.deterministic_algorithms": True})
    assert effect(c.warn_only(ctx(cpu, cpu))) == ("none", None)
    assert c.warn_only(ctx(cpu, on)) is None
    assert effect(c.deterministic_algorithms(ctx(cpu, on))) == ("numerics", 1)  # on CPU: rarely
    assert c.deterministic_algorithms(ctx(gpu, on)) is None


def test_an_inductor_setting_its_other_fields_explain_adds_no_cause() -> None:
    cpu = cpu_record()
    on = edit(cpu, **{"determinism.deterministic_algorithms": True})
    path = "determinism.inductor.deterministic"
    # inductor imported in B only, by use_deterministic_algorithms(True): explained
    found = c.inductor_config(ctx(cpu, on, path, MISSING, True))
    assert found is not None
    assert found.effect == "none"
    assert "use_deterministic_algorithms or TORCHINDUCTOR_DETERMINISTIC" in found.explanation
    assert c.inductor_config(ctx(cpu, cpu, path, MISSING, True)) is None  # nothing explains it
    tuned = edit(cpu, **{"determinism.env.TORCHINDUCTOR_MAX_AUTOTUNE": "1"})
    autotune = "determinism.inductor.max_autotune"
    assert c.inductor_config(ctx(cpu, tuned, autotune, False, True)) is not None
    assert c.inductor_config(ctx(cpu, cpu, autotune, False, True)) is None
    assert c.inductor_config(ctx(cpu, on, "determinism.inductor.other", MISSING, True)) is None


@pytest.mark.parametrize(
    ("a", "b", "none"),
    [
        ({"ran": False}, {"ran": False}, True),
        ({"ran": True, "backend": "eager"}, {"ran": False}, True),
        ({"ran": True, "backend": "eager, inductor"}, {"ran": False}, False),
        ({"ran": True, "backend": "aot_eager"}, {"ran": False}, False),
        ({"ran": False}, None, False),  # not recorded: not known to be eager
    ],
)
def test_compiled_code_changes_nothing_where_both_ran_eager_kernels(
    a: dict[str, Any], b: dict[str, Any] | None, none: bool
) -> None:
    ra = edit(cpu_record(), **{"first_step.compiled": a})
    rb = edit(cpu_record(), **({"first_step.compiled": b} if b is not None else {}))
    assert (c.compiled_kernels(ctx(ra, rb)) is not None) is none


def test_nccl_reduces_only_in_a_multi_process_job_of_nccl() -> None:
    cpu = cpu_record()
    assert "single-process" in c.nccl(ctx(cpu, cpu)).explanation  # type: ignore[union-attr]
    gloo = edit(cpu, **{"distributed.world_size": 2, "distributed.backend": "gloo"})
    found = c.nccl(ctx(gloo, gloo))
    assert found is not None
    assert "(process group A: gloo, B: gloo)" in found.explanation
    unknown = edit(cpu, **{"distributed.world_size": 2})
    assert "Neither run computed on a GPU" in c.nccl(ctx(unknown, gloo)).explanation  # type: ignore[union-attr]
    nccl = edit(gloo, **{"distributed.backend": "cpu:gloo,cuda:nccl"})
    assert c.nccl(ctx(gloo, nccl)) is None
    gpu = edit(gpu_record("a100"), **{"distributed.world_size": 2})  # no group recorded
    assert c.nccl(ctx(gpu, gloo)) is None


def loader(**fields: Any) -> Record:
    return edit(cpu_record(), **{"data.loaders": [{"batch_size": 8, **fields}]})


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"sampler": c.ITERABLE_SAMPLER}, ("randomness", 3)),
        ({"in_order": False}, ("randomness", 3)),
        ({"dataset": {"draws_random": False}}, ("none", None)),
        ({"dataset": {"draws_random": True}}, ("randomness", None)),
        ({"dataset": {}}, None),  # not known: the rule's own words
    ],
)
def test_the_worker_count_matters_where_workers_decide_order_or_draw(
    fields: dict[str, Any], expected: tuple[str, int | None] | None
) -> None:
    a = b = loader(**fields)
    assert effect(c.num_workers(ctx(a, b, "data.loaders.0.num_workers", 0, 2))) == expected


def test_the_worker_count_reads_the_loader_it_changed_in() -> None:
    two = edit(cpu_record(), **{"data.loaders": [
        {"dataset": {"draws_random": False}}, {"dataset": {"draws_random": True}}
    ]})  # fmt: skip
    assert effect(c.num_workers(ctx(two, two, "data.loaders.0.num_workers"))) == ("none", None)
    assert effect(c.num_workers(ctx(two, two, "data.loaders.1.num_workers"))) == (
        "randomness",
        None,
    )
    # a value declared for the run stands for any loader of both
    declared = c.num_workers(ctx(two, two, "data.declared.num_workers"))
    assert effect(declared) == ("randomness", None)


def test_draws_random_known_in_one_run_only_says_nothing() -> None:
    cpu = cpu_record()
    assert c.draws_random(ctx(cpu, cpu, va=True, vb=False)) is None
    assert effect(c.draws_random(ctx(cpu, cpu, va=None, vb=True))) == ("none", None)


def program_seeded(seed: int) -> Record:
    """A run whose program called ``torch.manual_seed(seed)`` itself."""
    return edit(cpu_record(), **{"seeds.torch_initial_seed": seed})


def test_the_same_torch_seed_set_by_different_seeders_is_no_difference() -> None:
    found = c.same_seed(ctx(seeded(cpu_record(), 4), program_seeded(4)))
    assert found is not None
    assert found.effect == "none"
    assert found.explanation.startswith(
        "Both runs trained from torch seed 4 (A seeded by the decorator, B by the program itself)"
    )
    assert c.same_seed(ctx(seeded(cpu_record(), 4), program_seeded(5))) is None
    assert c.same_seed(ctx(cpu_record(), cpu_record())) is None  # unseeded: no seed known


def test_seeds_that_differ_are_named_by_who_set_them() -> None:
    programs = c.unseeded(ctx(program_seeded(1), program_seeded(2)))
    assert effect(programs) == ("randomness", 3)
    assert "torch was seeded with 1 in A and 2 in B" in programs.explanation  # type: ignore[union-attr]
    mixed = c.unseeded(ctx(seeded(cpu_record(), 4), cpu_record()))
    assert mixed is not None
    assert mixed.explanation.startswith(
        "A was seeded with 4; B was not seeded, so it drew its own seed"
    )
    neither = c.unseeded(ctx(cpu_record(), cpu_record()))
    assert effect(neither) == ("none", None)
    assert "Neither run was seeded" in neither.explanation
    same = c.unseeded(ctx(seeded(cpu_record(), 4), program_seeded(4)))
    assert same == c.same_seed(ctx(seeded(cpu_record(), 4), program_seeded(4)))


def test_runs_that_seeded_tensorflow_only_depend_on_whether_torch_was_used() -> None:
    tf = edit(cpu_record(), **{"tensorflow.global_seed": 7})
    assert effect(c.unseeded(ctx(tf, tf))) == ("randomness", 1)
    unused = edit(tf, **{"seeds.torch_imported_by_program": False})
    assert effect(c.unseeded(ctx(unused, unused))) == ("none", None)
    assert effect(c.unseeded(ctx(unused, tf))) == ("randomness", 1)


def test_a_different_rng_state_right_after_the_same_seed_is_a_draw_before_training() -> None:
    after = edit(seeded(cpu_record(), 4), **{"seeds.captured_at_stage": "after_seed"})
    assert effect(c.rng_state(ctx(after, after))) == ("randomness", None)
    assert c.rng_state(ctx(after, seeded(cpu_record(), 4))) is None  # one taken elsewhere
    other_seed = edit(after, **{"seeds.requested": 5})
    assert c.rng_state(ctx(after, other_seed)) is None
    unseeded = edit(cpu_record(), **{"seeds.captured_at_stage": "after_seed"})
    assert c.rng_state(ctx(unseeded, unseeded)) is None


def test_a_world_size_change_names_the_global_batch_of_each_run() -> None:
    one = loader()
    two = edit(one, **{"distributed.world_size": 2})
    found = c.world_size(ctx(one, two))
    assert effect(found) == ("recipe", 3)
    assert "A: 8 × 1 = 8, B: 8 × 2 = 16" in found.explanation  # type: ignore[union-attr]
    declared = edit(cpu_record(), **{"data.declared.batch_size": 32})
    assert "A: 32 × 1 = 32, B: ? × 1" in c.world_size(ctx(declared, cpu_record())).explanation  # type: ignore[union-attr]


def ranked(record: Record, *ranks: dict[str, Any]) -> Record:
    return edit(record, **{"distributed.world_size": len(ranks), "distributed.ranks": list(ranks)})


def test_rank_fields_count_only_where_both_runs_recorded_the_rank() -> None:
    cpu = cpu_record()
    two, one = ranked(cpu, {}, {}), ranked(cpu, {})
    path = "distributed.ranks.1.hashes.env"
    assert effect(c.both_ranked(ctx(two, one, path))) == ("none", None)
    assert c.both_ranked(ctx(two, two, path)) is None
    assert effect(c.both_ranked(ctx(two, two, "distributed.ranks"))) == ("none", None)
    assert c.rank_driver(ctx(two, one, path)) == c.both_ranked(ctx(two, one, path))
    assert c.rank_driver(ctx(two, two, path)) == c.driver(ctx(two, two, path))


def test_a_rank_hash_equal_to_rank_zero_s_in_both_runs_adds_no_cause() -> None:
    cpu = cpu_record()
    env = cpu["hashes"]["env"]
    like_zero = ranked(cpu, {"hashes": {"env": env}}, {"hashes": {"env": env}})
    path = "distributed.ranks.1.hashes.env"
    found = c.rank_hash(ctx(like_zero, like_zero, path))
    assert effect(found) == ("none", None)
    assert "this rank's env hash is rank 0's" in found.explanation
    apart = ranked(cpu, {"hashes": {"env": env}}, {"hashes": {"env": "another"}})
    assert c.rank_hash(ctx(like_zero, apart, path)) is None


def test_a_rank_s_gpu_is_judged_as_rank_zero_s() -> None:
    path = "distributed.ranks.1.gpu"
    h100 = {"compute_capability": "9.0", "sm_count": 132}
    a = ranked(gpu_record("h100"), h100, h100)
    b = ranked(gpu_record("h200"), h100, h100)
    assert c.rank_gpu(ctx(a, b, path)) == c.Outcome("numerics", c.SAME_ARCHITECTURE, prior=1)
    other = ranked(gpu_record("h200"), h100, {"compute_capability": "8.0", "sm_count": 108})
    assert c.rank_gpu(ctx(a, other, path)) is None
    unread = ranked(gpu_record("h200"), h100, {"compute_capability": "none", "sm_count": 132})
    assert c.rank_gpu(ctx(unread, unread, path)) is None
    cpu = ranked(cpu_record(), {}, {})
    assert c.rank_gpu(ctx(cpu, cpu, path)) == c.Outcome("none", c.CPU_ONLY_TORCH)
