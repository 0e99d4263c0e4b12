"""A rerun's run name (``prove/names.py``): the run it repeats, its number, what it set in the
words a user gave it, and never longer than MLflow's runs table shows."""

from __future__ import annotations

from mlflow_fingerprint.prove.names import MAX_CHARS, SEPARATOR, rerun_name


def test_what_a_rerun_set_is_named_as_the_user_knows_it() -> None:
    name = rerun_name(
        "A",
        2,
        {
            "program.options.num-workers": 2,
            "numerics.env.CUBLAS_WORKSPACE_CONFIG": None,
            "program.sources.files.model.py": "digest",
            "seeds.requested": 1,
        },
    )
    assert (
        name
        == "A·rerun 2 (num-workers=2, CUBLAS_WORKSPACE_CONFIG=absent, B's model.py, requested=1)"
    )
    assert rerun_name("A", 1, {}) == f"A{SEPARATOR} 1 (as recorded)"


def test_a_long_name_is_cut_and_says_so() -> None:
    name = rerun_name("A", 3, {f"program.options.flag{i}": "x" * 20 for i in range(10)})
    assert len(name) <= MAX_CHARS
    assert name.endswith("…)")
    assert name.startswith("A·rerun 3 (flag0=")
