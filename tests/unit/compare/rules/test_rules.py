"""The rules module: every rule is sound on its own, and conditional where the facts are."""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from mlflow_fingerprint import diff, knowledge
from mlflow_fingerprint.audit import Finding, audit
from mlflow_fingerprint.compare import citations
from mlflow_fingerprint.compare.conditions import Outcome
from mlflow_fingerprint.compare.fields import FieldChange
from mlflow_fingerprint.compare.report import Difference, Report, RunRef
from mlflow_fingerprint.compare.rules import EFFECTS, RULES, Rule, Source, classify
from mlflow_fingerprint.compare.rules import gpu as gpu_rules
from support.records import cpu_record, edit, gpu_record, seeded
from support.reports import effect_of

KB_ROWS = knowledge.rows()
rules_package = sys.modules["mlflow_fingerprint.compare.rules"]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.pattern)
def test_rule_is_well_formed_and_cites_what_a_user_can_open(rule):
    assert rule.effect in EFFECTS
    assert 1 <= rule.prior <= 3
    text = rule.explanation
    assert text.endswith(".")
    assert "\n" not in text
    assert text == text.strip()
    assert len(re.findall(r"[.!?](\s|$)", text)) == 1, "one sentence"
    source = rule.source
    assert source.url or source.kb
    if source.url is not None:
        parts = urlsplit(source.url)
        assert (parts.scheme, bool(parts.netloc)) == ("https", True), source.url
        assert not re.search(r"\s", source.url)
    if source.kb is not None:
        assert source.kb in KB_ROWS, f"{source.kb!r} is no row of the shipped knowledge base"
    assert "../shared" not in str(source)
    assert "../shared" not in text


def test_every_knowledge_base_row_a_source_names_exists_in_the_shipped_file():
    """Also the fallback's source, and the enablers' and audit's citations."""
    cited = [v for v in vars(citations).values() if isinstance(v, Source)]
    assert cited
    for source in cited:
        assert source.kb is None or source.kb in KB_ROWS, source
    shipped = Path(knowledge.__file__).with_name(knowledge.DETERMINISM)
    assert shipped.is_file(), "the knowledge base sits beside its reader, as in the wheel"


def test_rule_patterns_are_unique():
    patterns = [r.pattern for r in RULES]
    assert len(patterns) == len(set(patterns))


def test_field_without_a_rule_falls_back_to_its_hash_group():
    record = cpu_record()
    recipe = classify(FieldChange("data.loaders.0.new_flag", 1, 2), record, record)
    env = classify(FieldChange("torch.new_build_knob", 1, 2), record, record)
    volatile = classify(FieldChange("platform.hostname_like", 1, 2), record, record)
    assert recipe.effect == "recipe"
    assert env.effect == "numerics"
    assert volatile.effect == "none"


@pytest.mark.parametrize(
    ("gpu", "expected"),
    [
        ("v100", "none"),
        ("t4", "none"),
        ("a100", "numerics"),
        ("rtx3090", "numerics"),
        ("l4", "numerics"),
        ("h100", "numerics"),
    ],
)
def test_tf32_matters_only_from_compute_capability_8(gpu, expected):
    off = gpu_record(gpu)
    on = edit(off, **{"numerics.fp32_precision.cuda_matmul": "tf32"})
    assert effect_of(diff(off, on), "numerics.fp32_precision.cuda_matmul").effect == expected


def test_tf32_on_a_cpu_only_run_is_none():
    record = cpu_record()
    report = diff(record, edit(record, **{"numerics.fp32_precision.cuda_matmul": "tf32"}))
    assert effect_of(report, "numerics.fp32_precision.cuda_matmul").effect == "none"
    assert report.exit_code == 0


def test_fp32_precision_spellings_with_one_meaning_are_not_a_difference():
    record = gpu_record("a100")
    same = edit(
        record,
        **{
            "numerics.fp32_precision.cuda_matmul": "none",
            "numerics.fp32_precision.mkldnn_matmul": "highest",
            "numerics.raw.cuda_matmul_fp32_precision": "ieee",
        },
    )
    report = diff(record, same)
    assert not report.effective_differences
    assert [d.field for d in report.differences] == ["numerics.raw.cuda_matmul_fp32_precision"]


def test_cudnn_differences_on_a_cpu_only_run_are_none():
    record = cpu_record()
    other = edit(
        record, **{"determinism.cudnn_benchmark": True, "determinism.cudnn_deterministic": True}
    )
    report = diff(record, other)
    assert {d.effect for d in report.differences} == {"none"}
    assert report.exit_code == 0


def test_cudnn_benchmark_on_a_gpu_run_is_numerics_and_top():
    record = gpu_record("a100")
    report = diff(record, edit(record, **{"determinism.cudnn_benchmark": True}))
    top = report.differences[0]
    assert (top.field, top.effect) == ("determinism.cudnn_benchmark", "numerics")


@pytest.mark.parametrize(
    ("torch", "deterministic", "expected"),
    [
        ("2.9.1+cu128", True, "numerics"),
        ("2.9.1+cu128", False, "none"),
        ("2.10.0+cu128", True, "none"),
    ],
)
def test_cublas_workspace_config_only_before_torch_2_10_with_determinism(
    torch, deterministic, expected
):
    record = edit(
        gpu_record("a100"),
        **{"torch.version": torch, "determinism.deterministic_algorithms": deterministic},
    )
    other = edit(record, **{"determinism.env.CUBLAS_WORKSPACE_CONFIG": ":4096:8"})
    found = effect_of(diff(record, other), "determinism.env.CUBLAS_WORKSPACE_CONFIG")
    assert found.effect == expected


def test_cublas_workspace_config_on_cpu_is_none():
    record = edit(
        cpu_record(), **{"torch.version": "2.4.0", "determinism.deterministic_algorithms": True}
    )
    other = edit(record, **{"determinism.env.CUBLAS_WORKSPACE_CONFIG": ":4096:8"})
    assert (
        effect_of(diff(record, other), "determinism.env.CUBLAS_WORKSPACE_CONFIG").effect == "none"
    )


def loader(num_workers, **extra):
    return {"batch_size": 32, "num_workers": num_workers, "shuffle": True, **extra}


def test_num_workers_is_randomness_unless_the_dataset_draws_nothing_in_workers():
    record = cpu_record()
    a = edit(record, **{"data.loaders": [loader(0)]})
    b = edit(record, **{"data.loaders": [loader(2)]})
    assert effect_of(diff(a, b), "data.loaders.0.num_workers").effect == "randomness"
    a = edit(record, **{"data.loaders": [loader(0, dataset={"class": "D", "draws_random": False})]})
    b = edit(record, **{"data.loaders": [loader(2, dataset={"class": "D", "draws_random": False})]})
    assert effect_of(diff(a, b), "data.loaders.0.num_workers").effect == "none"


def test_num_workers_counts_only_the_loader_it_changed_and_never_excuses_stream_order():
    record = cpu_record()
    quiet = {"class": "D", "draws_random": False}
    augmented = {"class": "A", "draws_random": True}
    a = edit(record, **{"data.loaders": [loader(0, dataset=quiet), loader(0, dataset=augmented)]})
    b = edit(record, **{"data.loaders": [loader(2, dataset=quiet), loader(0, dataset=augmented)]})
    assert effect_of(diff(a, b), "data.loaders.0.num_workers").effect == "none"
    b = edit(a, **{"data.loaders.1.num_workers": 2})
    found = effect_of(diff(a, b), "data.loaders.1.num_workers")
    assert (found.effect, found.rank) == ("randomness", 1)
    assert "draws_random" in found.explanation
    for unordered in ({"sampler": "_InfiniteConstantSampler"}, {"in_order": False}):
        a = edit(record, **{"data.loaders": [loader(0, dataset=quiet, **unordered)]})
        b = edit(record, **{"data.loaders": [loader(2, dataset=quiet, **unordered)]})
        assert effect_of(diff(a, b), "data.loaders.0.num_workers").effect == "randomness"


def test_augmentation_on_in_one_run_only_is_recipe_and_an_unknown_side_is_none():
    record = cpu_record()
    a = edit(record, **{"data.loaders": [loader(0, dataset={"class": "D", "draws_random": False})]})
    b = edit(a, **{"data.loaders.0.dataset.draws_random": True})
    assert effect_of(diff(a, b), "data.loaders.0.dataset.draws_random").effect == "recipe"
    unknown = edit(a, **{"data.loaders.0.dataset.draws_random": None})
    report = diff(a, unknown)
    assert effect_of(report, "data.loaders.0.dataset.draws_random").effect == "none"
    assert report.exit_code == 0


def test_two_unseeded_runs_differ_only_in_the_draw_their_enabler_allows():
    record = cpu_record()
    other = edit(record, **{"seeds.torch_initial_seed": 14832843997580184315})  # a drawn seed
    report = diff(record, other)
    (drawn,) = report.differences
    assert (drawn.field, drawn.effect) == ("seeds.torch_initial_seed", "none")
    assert "Neither run was seeded" in drawn.explanation
    assert report.enablers[0].field == "seeds.requested"


def test_rng_state_digest_matters_only_right_after_the_same_seed():
    base = edit(seeded(cpu_record(), 0), **{"seeds.captured_at_stage": "after_seed"})
    moved = edit(base, **{"seeds.state_digests.torch_cpu": "0" * 16})
    assert effect_of(diff(base, moved), "seeds.state_digests.torch_cpu").effect == "randomness"
    later = edit(base, **{"seeds.captured_at_stage": "capture"})
    moved_later = edit(later, **{"seeds.state_digests.torch_cpu": "0" * 16})
    assert effect_of(diff(later, moved_later), "seeds.state_digests.torch_cpu").effect == "none"


TYPO_MODULE = """
from mlflow_fingerprint.compare import citations
from mlflow_fingerprint.compare.rules.base import Rule

RULES = (Rule("numerics.new_flag", "numeric", "A typo.", citations.TORCH, priority=5),)
"""


def test_a_rule_with_an_unknown_effect_fails_when_its_module_is_imported(tmp_path, monkeypatch):
    """A subject module with a misspelt effect never loads, so no diff can meet it."""
    (tmp_path / "typo_rules.py").write_text(TYPO_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    message = (
        "unknown effect of rule 'numerics.new_flag' 'numeric': "
        "expected one of recipe, randomness, numerics, none"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        importlib.import_module("typo_rules")
    assert "typo_rules" not in sys.modules


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: Rule("torch.x", "numeric", "A typo.", citations.TORCH, priority=1),
            "unknown effect of rule 'torch.x' 'numeric'",
        ),
        (
            lambda: Rule("torch.x", "numerics", "Fine.", citations.TORCH, prior=4, priority=1),
            "prior of rule 'torch.x' must be 1, 2 or 3",
        ),
        (lambda: Rule("torch..x", "none", "Fine.", citations.TORCH, priority=1), "empty segment"),
        (lambda: Outcome("Numerics", "Case matters."), "unknown effect 'Numerics'"),
        (
            lambda: Difference("torch.x", 1, 2, "recipes", "A typo.", "", 1),
            "unknown effect 'recipes'",
        ),
        (
            lambda: Report("explaned", RunRef("a"), RunRef("b")),
            "unknown verdict 'explaned': expected one of same_results, explained,",
        ),
        (lambda: RunRef("a", kind="files"), "unknown reference kind 'files'"),
        (
            lambda: Finding("seeds", "severe", "randomness", "f", "fix", "s"),
            "unknown severity 'severe'",
        ),
        (lambda: Source("http://example.org/doc"), "well-formed https URL"),
        (lambda: Source("https://docs.pytorch.org/a page"), "well-formed https URL"),
        (lambda: Source(), "needs a url, a knowledge-base row or both"),
    ],
)
def test_records_refuse_an_unknown_word_when_built(build, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        build()


def test_the_same_words_build_records_whose_json_is_the_plain_word():
    difference = Difference("torch.x", 1, 2, "numerics", "Why.", str(citations.TORCH), 1)
    report = Report("explained", RunRef("a"), RunRef("b", kind="file"), (difference,))
    assert json.loads(json.dumps(report.to_dict()))["differences"][0]["effect"] == "numerics"
    assert report.to_dict()["verdict"] == "explained"


def test_a_pattern_two_subjects_both_claim_fails_the_collection(monkeypatch):
    monkeypatch.setattr(rules_package, "SUBJECTS", (*rules_package.SUBJECTS, gpu_rules))
    with pytest.raises(ValueError, match=r"rule pattern used twice: gpu\.cuda_driver_version"):
        rules_package._collect(r for subject in rules_package.SUBJECTS for r in subject.RULES)


def test_rules_are_ordered_by_their_explicit_priority():
    priorities = [rule.priority for rule in RULES]
    assert priorities == sorted(priorities)
    assert len(set(priorities)) == len(priorities)
    by_subject = {rule.pattern for subject in rules_package.SUBJECTS for rule in subject.RULES}
    assert by_subject == {rule.pattern for rule in RULES}


def test_no_report_or_audit_cites_a_path_outside_the_package():
    """Every source a reader sees is a public page or the knowledge base shipped in the wheel."""
    report = diff(cpu_record(), gpu_record("a100"))
    text = json.dumps(report.to_dict(include_none=True))
    assert report.differences
    assert "../shared" not in text
    assert all(
        d.source.startswith("https://") or knowledge.SHOWN_AS in d.source
        for d in report.differences
    )
    assert "../shared" not in json.dumps(audit(cpu_record()).to_dict())


def test_an_untracked_list_holding_a_non_path_names_nothing_and_breaks_no_diff():
    """A damaged record (found by the property test): ``git.untracked_files`` holding a null
    beside a real entry. The real entry still marks the script untracked; the null is skipped."""
    from mlflow_fingerprint.compare.rules.program import untracked

    record = edit(cpu_record(), **{"git.untracked_files": [None, 3, "tools/", "x.py"]})
    assert untracked(record, "x.py")
    assert untracked(record, "tools/run.py")
    assert not untracked(record, "y.py")
    other = edit(record, **{"program.entry.path": "x.py", "program.entry.kind": "script"})
    assert diff(record, other).differences  # compared, not raised


def test_compiled_code_in_one_run_only_is_numerics_with_the_reason_and_its_source():
    """Two records that differ only in whether the training ran torch.compile's code (and with
    which backend and mode): a numerics difference per part, explained and cited."""
    eager = edit(
        seeded(cpu_record(), 0),
        **{"first_step.compiled": {"ran": False, "backend": None, "mode": None}},
    )
    compiled = edit(
        eager,
        **{"first_step.compiled": {"ran": True, "backend": "inductor", "mode": "max-autotune"}},
    )
    report = diff(eager, compiled)
    found = {d.field: d for d in report.effective_differences}
    assert set(found) == {f"first_step.compiled.{k}" for k in ("ran", "backend", "mode")}
    assert {d.effect for d in found.values()} == {"numerics"}
    ran = found["first_step.compiled.ran"]
    assert (ran.a, ran.b) == (False, True)
    assert "sum in another order" in ran.explanation
    assert ran.source == (
        "https://docs.pytorch.org/docs/stable/generated/torch.compile.html; "
        f"{knowledge.SHOWN_AS}: Compiled code at the first step (`torch.compile` backend and mode)"
    )
    assert diff(compiled, edit(compiled)).effective_differences == ()


def test_compiled_code_on_eagers_kernels_changes_nothing():
    """torch.compile's eager backend traces the code and runs eager's kernels: against a plain
    eager run, or a run whose backend was asked for before any graph ran, nothing rounds
    otherwise. aot_eager's decompositions can, so it stays a numerics difference."""
    eager = edit(
        seeded(cpu_record(), 0),
        **{"first_step.compiled": {"ran": False, "backend": None, "mode": None}},
    )

    def compiled_with(backend: str, ran: bool = True) -> dict:
        return edit(
            eager, **{"first_step.compiled": {"ran": ran, "backend": backend, "mode": "default"}}
        )

    for other in (compiled_with("eager"), compiled_with("inductor", ran=False)):
        report = diff(eager, other)
        assert report.effective_differences == ()
        noted = {d.field: d for d in report.differences}
        assert {d.effect for d in noted.values()} == {"none"}
        assert "eager's kernels" in noted["first_step.compiled.backend"].explanation
    for backend in ("aot_eager", "inductor"):
        found = {d.field: d for d in diff(eager, compiled_with(backend)).effective_differences}
        assert found["first_step.compiled.ran"].effect == "numerics"
    both = diff(compiled_with("eager"), compiled_with("eager, inductor"))
    assert {d.effect for d in both.effective_differences} == {"numerics"}
