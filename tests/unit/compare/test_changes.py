"""One change is one difference, the noise band comes from replicates of the same recipe, and the
TF32 enabler names what is on: the three things an H100 showed (a CNN run twice with identical
settings parts at step 3 from cuDNN's atomics; ``--tf32-api legacy`` switched only
``numerics.fp32_precision.cudnn_rnn`` and parts at step 8 by less than that; ``--tf32 on`` switched
matmuls and convolutions), on records of a replayed H100 and real sqlite stores."""

from __future__ import annotations

import numpy as np
import pytest

from mlflow_fingerprint import diff
from mlflow_fingerprint.compare.changes import names_match
from mlflow_fingerprint.compare.enablers import find_enablers
from mlflow_fingerprint.present import render
from support.records import cpu_record, edit, gpu_record, log_run, new_store, seeded

IEEE = {"cuda_matmul": "ieee", "cudnn_conv": "ieee", "cudnn_rnn": "tf32"}


def h100(options: dict, precision: dict) -> dict:
    """A seed-0 run on an H100 with these options (read with their defaults) and precisions."""
    return edit(
        seeded(gpu_record("h100"), 0),
        **{
            "program.options": options,
            "program.options_source": "argparse",
            **{f"numerics.fp32_precision.{k}": v for k, v in precision.items()},
        },
    )


BASE = {"tf32": "off", "tf32-api": "precision", "steps": 300}


@pytest.fixture(scope="module")
def store(tmp_path_factory, mlflow_db_template):
    return new_store(tmp_path_factory.mktemp("changes-store"), mlflow_db_template)


def curve(parts_at: int, gap: float, n: int = 12) -> list[float]:
    base = list(np.linspace(2.3, 0.0116, n))
    return base[:parts_at] + [v + gap for v in base[parts_at:]]


def test_an_option_switching_numerics_is_one_difference_with_its_consequences() -> None:
    on = h100({**BASE, "tf32": "on"}, {"cuda_matmul": "tf32", "cudnn_conv": "tf32"})
    off = h100(BASE, IEEE)
    report = diff(on, off)
    (change,) = report.effective_differences
    assert (change.field, change.a, change.b) == ("program.options.tf32", "on", "off")
    assert change.effect == "numerics"
    assert [c.field for c in change.consequences] == [
        "numerics.fp32_precision.cuda_matmul",
        "numerics.fp32_precision.cudnn_conv",
    ]
    assert report.to_dict()["differences"][0]["consequences"][0]["a"] == "tf32"


def test_the_tf32_enabler_names_the_backend_still_on_and_its_fix() -> None:
    record = h100(BASE, IEEE)  # matmuls and convolutions set to IEEE, cuDNN RNNs left on TF32
    (tf32,) = [e for e in find_enablers(record, record) if e.field == "numerics.fp32_precision"]
    assert "cuDNN RNNs (cudnn_rnn)" in tf32.explanation
    assert "matmul" not in tf32.explanation
    assert tf32.fix == 'torch.backends.cudnn.rnn.fp32_precision = "ieee"'
    ieee = h100(BASE, {**IEEE, "cudnn_rnn": "ieee"})
    assert "numerics.fp32_precision" not in [e.field for e in find_enablers(ieee, ieee)]


def test_a_gap_within_the_noise_of_the_same_recipe_is_not_explained_by_what_differs(store):
    base = h100(BASE, IEEE)
    legacy = h100({**BASE, "tf32-api": "legacy"}, {**IEEE, "cudnn_rnn": "ieee"})
    a = log_run(store, "h100", "base", base, {"loss": curve(12, 0.0)})
    log_run(store, "h100", "base2", base, {"loss": curve(3, 1.4e-4)})
    b = log_run(store, "h100", "legacy", legacy, {"loss": curve(8, 2.8e-5)})
    log_run(store, "h100", "sweep", h100({**BASE, "steps": 9}, IEEE), {"loss": curve(0, 0.5)})
    report = diff(a, b, tracking_uri=store)
    assert report.verdict == "nondeterministic"
    assert report.within_noise
    (loss,) = report.metrics
    assert loss.first_divergence_step == 8
    assert (loss.spread.runs, loss.spread.parts_at, loss.spread.outside) == (2, 3, False)
    assert loss.spread.band == pytest.approx(1.4e-4)
    text = render(report, "text")
    assert "most likely" not in text
    # both seeded with 0: judged against reruns at seed 0, and the report says so
    assert (loss.spread.kind, loss.spread.seed) == ("same_seed", 0)
    band = "run-to-run noise at seed 0 (band 0.00014 from 2 replicate runs seeded with 0, part"
    assert f"within {band} at step 3)" in " ".join(text.split())  # as wrapped
    assert "program.options.tf32-api is not shown to have changed them" in text
    # The differences are still listed, as what differs: one option and what it set.
    (change,) = report.effective_differences
    assert change.field == "program.options.tf32-api"
    assert [c.field for c in change.consequences] == ["numerics.fp32_precision.cudnn_rnn"]


def test_a_gap_beyond_the_noise_of_the_same_recipe_is_explained(store):
    base = h100(BASE, IEEE)
    tf32 = h100({**BASE, "tf32": "on"}, {"cuda_matmul": "tf32", "cudnn_conv": "tf32"})
    a = log_run(store, "h100-b", "base", base, {"loss": curve(12, 0.0)})
    log_run(store, "h100-b", "base2", base, {"loss": curve(3, 1.4e-4)})
    b = log_run(store, "h100-b", "tf32", tf32, {"loss": curve(0, 5.7e-4)})
    report = diff(a, b, tracking_uri=store)
    assert report.verdict == "explained"
    assert not report.within_noise
    assert report.metrics[0].spread.outside  # earlier than replicates part, and larger
    assert report.effective_differences[0].field == "program.options.tf32"


def test_an_option_of_unknown_default_never_outranks_a_measured_difference() -> None:
    record = edit(
        cpu_record(), **{"program.options": {"epochs": "3"}, "program.options_source": "argv"}
    )
    other = edit(
        record,
        **{"program.options": {"epochs": "3", "lr": "0.02"}, "torch.threads.intra_op": 7},
    )
    report = diff(record, other)
    first, second = report.effective_differences
    assert first.field == "torch.threads.intra_op"  # measured in both: first
    assert second.field == "program.options.lr"
    assert render(report, "text").count("unknown") >= 1
    assert "unknown (not passed, and its default was not recorded) vs 0.02" in second.explanation


def test_a_measured_param_heads_an_option_of_unknown_default() -> None:
    record = edit(cpu_record(), **{"program.options": {}, "program.options_source": "argv"})
    a = {**record, "params": {"lr": "0.05"}}
    b = {**edit(record, **{"program.options": {"lr": "0.02"}}), "params": {"lr": "0.02"}}
    (change,) = diff(a, b).effective_differences
    assert (change.field, change.a, change.b) == ("params.lr", "0.05", "0.02")
    assert [c.field for c in change.consequences] == ["program.options.lr"]


@pytest.mark.parametrize(
    ("option", "field", "expected"),
    [
        ("num-workers", "num_workers", True),
        ("workers", "num_workers", True),
        ("deterministic", "deterministic_algorithms", True),
        ("lr", "lr", True),
        ("lr", "lr_scheduler", False),
        ("tf32", "cuda_matmul", False),
    ],
)
def test_an_option_names_the_fields_it_sets(option, field, expected) -> None:
    assert names_match(option, field) is expected


def argparse_run(options: dict, loader: dict) -> dict:
    """A seed-0 CPU run with these command-line options (read with their defaults) and loader."""
    return edit(
        seeded(cpu_record(), 0),
        **{
            "program.options": options,
            "program.options_source": "argparse",
            "data.loaders": [loader],
        },
    )


SEEDED_LOADER = {
    "batch_size": 32,
    "num_workers": 0,
    "shuffle": True,
    "worker_init_fn": "mlflow_fingerprint.run.seeding.seed_worker",
    "generator": {"present": True, "initial_seed": 0},
    "dataset": {"class": "Augmented", "draws_random": True},
}
UNSEEDED_WORKERS = {
    **SEEDED_LOADER,
    "num_workers": 2,
    "worker_init_fn": None,
    "generator": {"present": False, "initial_seed": None},
}
OPTIONS = {"num-workers": 0, "no-seed-workers": False, "batch-size": 32}


def test_workers_and_the_seeding_switched_off_with_them_are_one_change() -> None:
    """The demo's ``--num-workers 2 --no-seed-workers``: one change headed by the worker count,
    the seeding option and every field the two set folded under it."""
    a = argparse_run(OPTIONS, SEEDED_LOADER)
    b = argparse_run({**OPTIONS, "num-workers": 2, "no-seed-workers": True}, UNSEEDED_WORKERS)
    report = diff(a, b)
    (change,) = report.effective_differences
    assert change.field == "program.options.num-workers"
    folded = [c.field for c in change.consequences]
    assert {
        "program.options.no-seed-workers",
        "data.loaders.0.num_workers",
        "data.loaders.0.worker_init_fn",
        "data.loaders.0.generator.present",
    } <= set(folded), folded
    text = render(report, "text")
    assert "\n2  " not in text  # one numbered change
    assert "↳ program.options.no-seed-workers: false -> true" in text


def test_the_batch_size_beside_the_workers_stays_a_change_of_its_own() -> None:
    """Two options that set the same loader, but not both its workers: two changes."""
    a = argparse_run(OPTIONS, SEEDED_LOADER)
    b = argparse_run(
        {**OPTIONS, "num-workers": 2, "batch-size": 64},
        {**SEEDED_LOADER, "num_workers": 2, "batch_size": 64},
    )
    heads = [d.field for d in diff(a, b).effective_differences]
    assert sorted(heads) == ["program.options.batch-size", "program.options.num-workers"]


def script_run(script: str, digest: str, argv: list[str], options: dict) -> dict:
    """A seed-0 CPU run of ``python <script> <argv>``, its options read with their defaults."""
    return edit(
        seeded(cpu_record(), 0),
        **{
            "program.argv": [script, *argv],
            "program.options": options,
            "program.options_source": "argparse",
            "program.entry": {"kind": "script", "path": script, "sha256": digest},
            "program.sources": {"files": {script: digest}, "digest": digest, "count": 1},
        },
    )


COPIED = {"lr": 0.05, "momentum": 0.0}


def test_an_edited_copy_of_the_script_is_one_change_with_the_default_it_changed() -> None:
    """``python my_copy.py`` where the copy changes one default: the entry point heads one
    change; its digest, both source entries and the option default are beneath it."""
    a = script_run("train.py", "aaaa", ["--lr", "0.05"], COPIED)
    b = script_run("my_copy.py", "bbbb", ["--lr", "0.05"], {**COPIED, "momentum": 0.9})
    report = diff(a, b)
    (change,) = report.effective_differences
    assert change.field == "program.entry.path"
    assert {
        "program.entry.sha256",
        "program.sources.files.train.py",
        "program.sources.files.my_copy.py",
        "program.options.momentum",
    } <= {c.field for c in change.consequences}
    (listed,) = report.to_dict()["differences"]
    assert listed["field"] == "program.entry.path"
    for form in ("text", "markdown", "html"):
        shown = render(report, form).replace("<wbr>", "")  # HTML breaks names at dots
        assert "↳ program.options.momentum" in shown, form
    assert "\n2  " not in render(report, "text")


def test_an_option_the_copy_was_also_given_stays_a_change_of_its_own() -> None:
    """``python my_copy.py --lr 0.1``: the copy, and the option the command line changed."""
    a = script_run("train.py", "aaaa", ["--lr", "0.05"], COPIED)
    b = script_run("my_copy.py", "bbbb", ["--lr", "0.1"], {"lr": 0.1, "momentum": 0.9})
    heads = {d.field: d for d in diff(a, b).effective_differences}
    assert set(heads) == {"program.entry.path", "program.options.lr"}
    assert "program.options.momentum" in {c.field for c in heads["program.entry.path"].consequences}
