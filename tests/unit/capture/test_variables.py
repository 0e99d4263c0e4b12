"""The process's environment in the record (``capture/variables.py``): every name, each value
as it is, masked with its digest where it looks secret, or its length and digest where it is too
long to be a knob; the volatile ones by name only. (How the program probe records them:
``test_program.py``.)"""

from __future__ import annotations

from mlflow_fingerprint.capture.variables import MAX_VARIABLES, probe_variables, recorded_value
from mlflow_fingerprint.model.variables import MAX_VALUE_CHARS
from mlflow_fingerprint.redact import MASK

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2


def test_a_knob_is_recorded_as_it_is() -> None:
    assert recorded_value("MOMENTUM", "0.9", set()) == "0.9"
    assert recorded_value("DATA_DIR", "/data/set-1", set()) == "/data/set-1"


def test_what_looks_secret_is_masked_and_keeps_a_digest_that_tells_values_apart() -> None:
    by_name = recorded_value("DB_PASSWORD", "letmein", set())
    assert by_name.startswith(f"{MASK} sha256:")
    assert "letmein" not in by_name
    assert by_name != recorded_value("DB_PASSWORD", "letmein2", set())
    assert by_name == recorded_value("DB_PASSWORD", "letmein", set())  # the same value: equal
    by_value = recorded_value("GREETING", f"token {TOKEN}", set())
    assert by_value.startswith(MASK)
    assert TOKEN not in by_value
    known = recorded_value("ENDPOINT", "host/abc-secret-def", {"abc-secret-def"})
    assert known.startswith(MASK)


def test_a_value_too_long_to_be_a_knob_is_its_length_and_digest() -> None:
    long = "x," * MAX_VALUE_CHARS
    assert recorded_value("CLASSPATH_LIKE", long, set()).startswith(f"<{len(long)} chars> sha256:")
    edge = "y" * MAX_VALUE_CHARS
    assert recorded_value("EDGE", edge, set()) == edge


def test_volatile_and_separately_recorded_variables_are_names_only() -> None:
    env = {"SHLVL": "2", "CUBLAS_WORKSPACE_CONFIG": ":4096:8", "LR": "0.1"}
    values, names = probe_variables(set(), env)
    assert values == {"LR": "0.1"}
    assert names == ["CUBLAS_WORKSPACE_CONFIG", "SHLVL"]


def test_the_number_of_variables_recorded_is_bounded_in_name_order() -> None:
    env = {f"KNOB_{i:04d}": str(i) for i in range(MAX_VARIABLES + 20)}
    values, names = probe_variables(set(), env)
    assert len(values) + len(names) == MAX_VARIABLES
    assert list(values)[-1] == f"KNOB_{MAX_VARIABLES - 1:04d}"
