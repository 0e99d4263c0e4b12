"""What a rerun can set (``compare/settable.py``): the knobs, what cannot be set, and the
allowlist of environment variables a record may hand a rerun (``model/variables.py``)."""

from __future__ import annotations

import pytest

from mlflow_fingerprint.compare.report import Difference
from mlflow_fingerprint.compare.settable import code_knobs, knob_for, options_with, split
from mlflow_fingerprint.model.missing import MISSING


def diff(field: str, a: object, b: object, effect: str = "recipe") -> Difference:
    return Difference(field, a, b, effect, "", "", 1)  # type: ignore[arg-type]


def test_split_sorts_differences_by_what_a_rerun_can_do() -> None:
    found = split(
        [
            diff("seeds.requested", 0, 1, "randomness"),
            diff("program.options.lr", "0.1", "0.2"),
            diff("data.loaders.0.num_workers", 0, 2, "randomness"),
            diff("data.loaders.1.num_workers", 0, 2, "randomness"),
            diff("torch.threads.env.OMP_NUM_THREADS", None, "1", "numerics"),
            diff("gpu.devices.0.name", "NVIDIA H100", MISSING, "numerics"),
            diff("seeds.torch_initial_seed", 0, 1, "randomness"),
            diff("platform.hostname", "a", "b", "none"),
            diff("platform.pid", 1, 2, "none"),
        ]
    )
    assert [(k.kind, k.key) for k in found.knobs] == [
        ("apply", "seeds.requested"),
        ("option", "lr"),
        ("apply", "data.num_workers"),
        ("env", "OMP_NUM_THREADS"),
    ]
    assert [d.field for d in found.cannot_set] == ["gpu.devices.0.name"]
    assert [d.field for d in found.no_effect] == ["platform.hostname"]  # pid is noise


def test_a_value_a_rerun_cannot_force_is_no_knob() -> None:
    assert knob_for(diff("seeds.requested", 0, None, "randomness")) is None
    assert knob_for(diff("determinism.cudnn_benchmark", True, MISSING, "numerics")) is None


@pytest.mark.parametrize(
    ("argv", "changes", "expected"),
    [
        (
            ["t.py", "--lr", "0.1", "--seed", "0"],
            {"lr": "0.2"},
            ["t.py", "--lr", "0.2", "--seed", "0"],
        ),
        (["t.py", "--lr=0.1"], {"lr": "0.2"}, ["t.py", "--lr", "0.2"]),
        (
            ["t.py", "--deterministic", "--seed", "0"],
            {"deterministic": None},
            ["t.py", "--seed", "0"],
        ),
        (["t.py", "--seed", "0"], {"augment": True}, ["t.py", "--seed", "0", "--augment"]),
        (["t.py", "-n", "3"], {"n": "4"}, ["t.py", "-n", "4"]),
    ],
)
def test_options_are_replaced_added_and_removed(argv, changes, expected) -> None:
    assert options_with(argv, changes) == expected


def test_code_knobs_are_one_per_changed_file() -> None:
    found = code_knobs({"b.py": ("1", "2"), "a.py": (None, "3")})
    assert [(k.key, k.a, k.b) for k in found] == [("a.py", None, "3"), ("b.py", "1", "2")]
    assert all(k.field.startswith("program.sources.files.") for k in found)


@pytest.mark.parametrize(
    "field",
    [
        "torch.threads.env.PYTHONPATH",
        "numerics.env.LD_PRELOAD",
        "determinism.env.PYTHONSTARTUP",
        "torch.threads.env.omp_num_threads",  # the allowlist is spelled exactly
    ],
)
def test_a_recorded_variable_outside_the_allowlist_cannot_be_set(field: str) -> None:
    d = diff(field, None, "/tmp/x", "none")  # whatever effect a rule gave it
    assert knob_for(d) is None
    found = split([d, diff("seeds.requested", 0, 1, "randomness")])
    assert [dd.field for dd in found.cannot_set] == [field]
    assert [k.field for k in found.knobs] == ["seeds.requested"]


def test_an_allowed_variable_with_a_value_no_environment_takes_cannot_be_set() -> None:
    bad = diff("torch.threads.env.OMP_NUM_THREADS", "1", "2\n3", "numerics")
    assert knob_for(bad) is None
    assert [d.field for d in split([bad]).cannot_set] == ["torch.threads.env.OMP_NUM_THREADS"]
    good = knob_for(diff("determinism.env.CUBLAS_WORKSPACE_CONFIG", None, ":4096:8", "numerics"))
    assert good is not None
    assert (good.kind, good.key, good.b) == (
        "apply",
        "determinism.env.CUBLAS_WORKSPACE_CONFIG",
        ":4096:8",
    )


def test_an_option_whose_value_the_record_masked_cannot_be_set() -> None:
    masked = diff("program.options.api-key", None, "***")
    assert knob_for(masked) is None
    assert [d.field for d in split([masked]).cannot_set] == ["program.options.api-key"]


def test_a_variable_of_the_program_s_own_is_a_knob_set_before_it_starts() -> None:
    """``MOMENTUM=0.5`` in B's environment: an env knob, and every rerun starts with A's value."""
    from mlflow_fingerprint.compare.settable import recorded_env

    found = split(
        [
            diff("program.env.MOMENTUM", "0.9", "0.5"),
            diff("program.env.ONLY_IN_A", "1", MISSING),
            diff("program.env.OMP_NUM_THREADS", "1", "2"),  # recorded under torch.threads
        ]
    )
    assert [(k.kind, k.key, k.b) for k in found.knobs] == [
        ("env", "MOMENTUM", "0.5"),
        ("env", "ONLY_IN_A", None),
    ]
    assert found.cannot_set == ()
    assert recorded_env(found.knobs) == {"MOMENTUM": "0.9", "ONLY_IN_A": "1"}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PYTHONPATH", "/tmp/hooks"),
        ("PYTHONSTARTUP", "/tmp/x.py"),
        ("LD_PRELOAD", "/tmp/x.so"),
        ("DYLD_INSERT_LIBRARIES", "/tmp/x.dylib"),
        ("BASH_ENV", "/tmp/x.sh"),
        ("CUDA_INJECTION64_PATH", "/tmp/x.so"),
        ("REQUESTS_CA_BUNDLE", "/tmp/ca.pem"),
        ("PWD", "/tmp"),  # volatile: never in program.env, refused where a record puts it there
        ("HF_TOKEN", "*** sha256:0123456789ab"),  # a secret, recorded as a digest only
        ("LONG", "<300 chars> sha256:0123456789ab"),
        ("bad name", "1"),
    ],
)
def test_the_interpreter_s_loader_s_and_secret_variables_are_never_set(
    name: str, value: str
) -> None:
    d = diff(f"program.env.{name}", None, value)
    assert knob_for(d) is None
    assert [x.field for x in split([d]).cannot_set] == [f"program.env.{name}"]


def test_a_package_version_is_a_knob_unless_the_pythons_differ() -> None:
    """B's numpy is built for a rerun of A; for another Python nothing of B's is built."""
    numpy = diff("packages.distributions.numpy", "1.26.4", "2.1.0", "none")
    found = split([numpy, diff("packages.digest", "1", "2", "numerics")])
    assert [(k.kind, k.key, k.a, k.b) for k in found.knobs] == [
        ("package", "numpy", "1.26.4", "2.1.0")
    ]
    assert found.cannot_set == ()
    other = split([numpy, diff("python.version", "3.11.9", "3.12.4", "numerics")])
    assert other.knobs == ()
    assert [d.field for d in other.cannot_set] == ["packages.distributions.numpy", "python.version"]
    gone = diff("packages.distributions.numpy", "1.26.4", MISSING, "none")
    crafted = diff("packages.distributions.numpy", "1.0", "1.0 --index-url http://x", "none")
    assert [d.field for d in split([gone, crafted]).cannot_set] == [gone.field, crafted.field]
