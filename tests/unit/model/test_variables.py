"""Which environment variables are volatile, choose code, or a rerun may set, and to what."""

from __future__ import annotations

from mlflow_fingerprint.model.variables import (
    code_variable,
    digested,
    env_field_name,
    process_may_set,
    settable_value,
    volatile_variable,
)


def test_code_variables_are_never_settable() -> None:
    for name in ("PYTHONPATH", "LD_PRELOAD", "DYLD_INSERT_LIBRARIES", "REQUESTS_CA_BUNDLE"):
        assert code_variable(name)
        assert not process_may_set(name)


def test_volatile_variables_are_never_settable() -> None:
    assert volatile_variable("XDG_CACHE_HOME")
    assert volatile_variable("MY_TOOL_DIR")
    assert not process_may_set("MY_TOOL_DIR")


def test_a_program_variable_and_the_allowlist_are_settable() -> None:
    assert process_may_set("CUBLAS_WORKSPACE_CONFIG")
    assert process_may_set("MY_LEARNING_RATE")
    assert not process_may_set("NOT A NAME")


def test_settable_values_are_short_printable_lines() -> None:
    assert settable_value(None)
    assert settable_value(":4096:8")
    assert not settable_value("a\nb")
    assert not settable_value("a\x00")
    assert not settable_value(1)
    assert not settable_value("x" * 257)


def test_digested_values_and_env_fields() -> None:
    assert digested("*** sha256:0123abcd")
    assert digested("<300 chars> sha256:ab")
    assert not digested("sha256:ab")
    assert env_field_name("torch.threads.env.OMP_NUM_THREADS") == "OMP_NUM_THREADS"
    assert env_field_name("torch.version") is None
