"""Parsing and applying MLFLOW_FINGERPRINT_APPLY / _STOP_AFTER (``run/apply.py``, ``run/stop.py``)
on real torch switches and real DataLoaders; the decorated runs are in tests/system."""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader

from mlflow_fingerprint.errors import BadOverride, FingerprintError, TrainingStopped
from mlflow_fingerprint.run.apply import (
    SETTABLE_FIELDS,
    LoaderOverrides,
    Overrides,
    apply_environment,
    apply_switches,
    forced_deterministic,
    forced_seed,
    overrides_from_env,
    parse_override,
    parse_stop_after,
    seeded_worker_init,
    stop_after_from_env,
)
from mlflow_fingerprint.run.loaders import describe
from mlflow_fingerprint.run.seeding import seed_worker
from mlflow_fingerprint.run.stop import StoppingSink
from mlflow_fingerprint.settings import APPLY, STOP_AFTER

# -- parsing ------------------------------------------------------------------------------------


def test_every_contract_field_is_settable_and_env_fields_are_patterns() -> None:
    expected = {
        "seeds.requested",
        "determinism.deterministic_algorithms",
        "determinism.cudnn_benchmark",
        "determinism.cudnn_deterministic",
        "torch.threads.intra_op",
        "torch.threads.inter_op",
        "data.num_workers",
        "data.generator_seed",
        "data.worker_seeding",
        "determinism.env.*",
        "numerics.env.*",
        *(
            f"numerics.fp32_precision.{b}"
            for b in ("cuda_matmul", "cudnn_conv", "cudnn_rnn", "mkldnn_matmul")
        ),
        "numerics.fp32_precision.mkldnn_conv",
        "numerics.fp32_precision.mkldnn_rnn",
    }
    assert set(SETTABLE_FIELDS) == expected
    assert len(SETTABLE_FIELDS) == len(expected)


def test_a_diff_field_passes_straight_through_and_the_tag_is_canonical() -> None:
    text = (
        '{"torch.threads.intra_op": 2, "seeds.requested": 0, "data.worker_seeding": true,'
        ' "numerics.fp32_precision.mkldnn_matmul": "bf16",'
        ' "determinism.env.CUBLAS_WORKSPACE_CONFIG": ":4096:8",'
        ' "numerics.env.NVIDIA_TF32_OVERRIDE": null}'
    )
    overrides = Overrides.parse(text)
    assert overrides.canonical() == (
        '{"data.worker_seeding":true,"determinism.env.CUBLAS_WORKSPACE_CONFIG":":4096:8",'
        '"numerics.env.NVIDIA_TF32_OVERRIDE":null,"numerics.fp32_precision.mkldnn_matmul":"bf16",'
        '"seeds.requested":0,"torch.threads.intra_op":2}'
    )
    assert overrides.environment() == {
        "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
        "NVIDIA_TF32_OVERRIDE": None,
    }
    assert overrides.touches_loaders()
    assert not Overrides.parse('{"seeds.requested": 3}').touches_loaders()


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("{seeds.requested: 1}", ["is not JSON"]),
        ("[1, 2]", ["must be a JSON object"]),
        ('{"seeds.request": 1}', ["'seeds.request'", "not a field a rerun can set"]),
        ('{"seeds.requested": "1"}', ["seeds.requested", "integer"]),
        ('{"seeds.requested": true}', ["seeds.requested", "integer"]),
        ('{"seeds.requested": -1}', ["seeds.requested", "[0, 4294967295]"]),
        ('{"data.num_workers": 1.5}', ["data.num_workers", "integer"]),
        ('{"torch.threads.intra_op": 0}', ["torch.threads.intra_op", ">= 1"]),
        ('{"determinism.cudnn_benchmark": 1}', ["determinism.cudnn_benchmark", "true or false"]),
        ('{"numerics.fp32_precision.cuda_matmul": "bf16"}', ["cuda_matmul", "ieee, tf32"]),
        ('{"numerics.fp32_precision.mkldnn_conv": "fp64"}', ["mkldnn_conv", "ieee, tf32, bf16"]),
        ('{"numerics.env.A-B": "1"}', ["'A-B'", "not an environment variable a rerun may set"]),
        ('{"numerics.env.PYTHONPATH": "/x"}', ["'PYTHONPATH'", "may set", "OMP_NUM_THREADS"]),
        ('{"determinism.env.LD_PRELOAD": "/x.so"}', ["'LD_PRELOAD'", "may set"]),
        ('{"determinism.env.MKL_CBWR": 3}', ["determinism.env.MKL_CBWR", "printable text"]),
        ('{"determinism.env.MKL_CBWR": "a\\u0000b"}', ["determinism.env.MKL_CBWR", "printable"]),
    ],
)
def test_bad_apply_is_one_line_naming_the_variable_and_field(text: str, names: list[str]) -> None:
    with pytest.raises(BadOverride) as caught:
        Overrides.parse(text)
    message = str(caught.value)
    assert isinstance(caught.value, FingerprintError)
    assert message.startswith(APPLY)
    assert "\n" not in message
    for name in names:
        assert name in message


def test_command_line_text_becomes_the_typed_value_per_field() -> None:
    assert parse_override("seeds.requested", "0") == ("seeds.requested", 0)
    assert parse_override("data.num_workers", " 4 ") == ("data.num_workers", 4)
    assert parse_override("determinism.cudnn_benchmark", "true") == (
        "determinism.cudnn_benchmark",
        True,
    )
    assert parse_override("data.worker_seeding", "0") == ("data.worker_seeding", False)
    assert parse_override("numerics.fp32_precision.cuda_matmul", "TF32") == (
        "numerics.fp32_precision.cuda_matmul",
        "tf32",
    )
    assert parse_override("numerics.env.NVIDIA_TF32_OVERRIDE", "null") == (
        "numerics.env.NVIDIA_TF32_OVERRIDE",
        None,
    )
    assert parse_override("determinism.env.MKL_CBWR", "AVX2") == (
        "determinism.env.MKL_CBWR",
        "AVX2",
    )
    for field, text in [
        ("seeds.requested", "zero"),
        ("determinism.cudnn_benchmark", "maybe"),
        ("numerics.fp32_precision.cudnn_conv", "bf16"),
        ("hardware.gpu", "A100"),
    ]:
        with pytest.raises(BadOverride, match=r"must be|not a field"):
            parse_override(field, text)


def test_stop_after_is_a_non_negative_step() -> None:
    assert parse_stop_after(" 12 ") == 12
    assert parse_stop_after("0") == 0
    for text in ("-1", "ten", "1.5", ""):
        with pytest.raises(BadOverride, match=STOP_AFTER):
            parse_stop_after(text)
    assert stop_after_from_env({}) is None
    assert stop_after_from_env({STOP_AFTER: "7"}) == 7
    assert overrides_from_env({}).values == {}
    assert overrides_from_env({APPLY: "  "}).values == {}
    assert overrides_from_env({APPLY: '{"seeds.requested": 5}'}).values == {"seeds.requested": 5}


def test_forced_seed_and_determinism_replace_the_arguments() -> None:
    none = Overrides()
    assert forced_seed(none, 3) == 3
    assert forced_seed(Overrides({"seeds.requested": 9}), 3) == 9
    assert forced_seed(Overrides({"seeds.requested": 9}), None) == 9
    on = Overrides({"determinism.deterministic_algorithms": True})
    off = Overrides({"determinism.deterministic_algorithms": False})
    assert forced_deterministic(none, "warn") == "warn"
    assert forced_deterministic(on, False) is True
    assert forced_deterministic(on, "warn") == "warn"
    assert forced_deterministic(off, True) is False


# -- process switches ---------------------------------------------------------------------------


def _mkldnn() -> Any:
    return torch.backends.mkldnn


def test_switches_are_set_and_restored_on_real_torch() -> None:
    cudnn = torch.backends.cudnn
    before = (
        cudnn.benchmark,
        cudnn.deterministic,
        _mkldnn().matmul.fp32_precision,
        _mkldnn().conv.fp32_precision,
        torch.get_num_threads(),
    )
    threads = 1 if torch.get_num_threads() != 1 else 2
    torch.use_deterministic_algorithms(True)
    try:
        applied = apply_switches(
            Overrides(
                {
                    "determinism.cudnn_benchmark": not cudnn.benchmark,
                    "determinism.cudnn_deterministic": not cudnn.deterministic,
                    "determinism.deterministic_algorithms": False,
                    "numerics.fp32_precision.mkldnn_matmul": "bf16",
                    "numerics.fp32_precision.mkldnn_conv": "tf32",
                    "torch.threads.intra_op": threads,
                }
            )
        )
        assert cudnn.benchmark is not before[0]
        assert cudnn.deterministic is not before[1]
        assert not torch.are_deterministic_algorithms_enabled()
        assert _mkldnn().matmul.fp32_precision == "bf16"
        assert _mkldnn().conv.fp32_precision == "tf32"
        assert torch.get_num_threads() == threads
        assert "set_num_threads" in " ".join(applied.actions)
        applied.undo()
        assert torch.are_deterministic_algorithms_enabled()
        assert (
            cudnn.benchmark,
            cudnn.deterministic,
            _mkldnn().matmul.fp32_precision,
            _mkldnn().conv.fp32_precision,
            torch.get_num_threads(),
        ) == before
    finally:
        torch.use_deterministic_algorithms(False)


def test_inter_op_threads_that_torch_refuses_are_a_warning_not_a_crash() -> None:
    overrides = Overrides({"torch.threads.inter_op": 2})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        apply_switches(overrides)  # the first call may still be allowed in this process
    with pytest.warns(UserWarning, match="torch.threads.inter_op"):
        applied = apply_switches(overrides)  # torch sets it at most once per process
    assert applied.actions == ()


@pytest.fixture
def clean_env() -> Iterator[None]:
    names = ("TORCHINDUCTOR_FALLBACK_RANDOM", "MKL_CBWR")
    saved = {n: os.environ.get(n) for n in names}
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def test_environment_is_set_unset_and_put_back(clean_env: None) -> None:
    os.environ.pop("TORCHINDUCTOR_FALLBACK_RANDOM", None)
    os.environ["MKL_CBWR"] = "was here"
    applied = apply_environment(
        Overrides(
            {"determinism.env.TORCHINDUCTOR_FALLBACK_RANDOM": "1", "determinism.env.MKL_CBWR": None}
        )
    )
    assert os.environ["TORCHINDUCTOR_FALLBACK_RANDOM"] == "1"
    assert "MKL_CBWR" not in os.environ
    applied.undo()
    assert "TORCHINDUCTOR_FALLBACK_RANDOM" not in os.environ
    assert os.environ["MKL_CBWR"] == "was here"


# -- DataLoaders ----------------------------------------------------------------------------------


def user_init(worker_id: int) -> None:
    del worker_id


def test_a_built_loader_gets_the_forced_workers_generator_and_seeding() -> None:
    loader = DataLoader(list(range(64)), batch_size=8, shuffle=True, worker_init_fn=user_init)
    assert loader.sampler.generator is None
    forcing = LoaderOverrides(
        Overrides({"data.num_workers": 2, "data.generator_seed": 42, "data.worker_seeding": True})
    )
    forcing.adjust(loader)
    generator = loader.generator
    assert loader.num_workers == 2
    assert loader.prefetch_factor == 2  # as the constructor sets it for workers
    assert generator.initial_seed() == 42
    assert loader.sampler.generator is generator  # the sampler shuffles with it
    init = loader.worker_init_fn
    assert isinstance(init, functools.partial)
    assert (init.func, init.args) == (seeded_worker_init, (user_init,))
    forcing.adjust(loader)  # once per loader: neither a new generator nor a second wrapping
    assert loader.generator is generator
    assert loader.worker_init_fn is init
    described = describe(loader)
    assert described["num_workers"] == 2
    assert described["generator"] == {"present": True, "initial_seed": 42}
    assert described["worker_init_fn"] == "mlflow_fingerprint.run.apply.seeded_worker_init"

    plain = DataLoader(list(range(8)), num_workers=2)
    LoaderOverrides(Overrides({"data.num_workers": 0, "data.worker_seeding": True})).adjust(plain)
    assert (plain.num_workers, plain.prefetch_factor) == (0, None)
    assert plain.worker_init_fn is seed_worker
    assert [int(b) for b in plain] == list(range(8))


def test_the_forced_generator_shuffles_each_epoch_differently_but_each_loader_alike() -> None:
    def epochs(loader: DataLoader) -> list[list[int]]:
        LoaderOverrides(Overrides({"data.generator_seed": 5})).adjust(loader)
        return [[int(i) for b in loader for i in b] for _ in range(2)]

    first = epochs(DataLoader(list(range(32)), batch_size=4, shuffle=True))
    torch.rand(3)  # the global RNG moves: it must not matter
    second = epochs(DataLoader(list(range(32)), batch_size=4, shuffle=True))
    assert first == second
    assert first[0] != first[1]
    assert sorted(first[0]) == list(range(32))


# -- STOP_AFTER ------------------------------------------------------------------------------


class Collected:
    """A metric sink that keeps what it is given, as a run's writer stores it."""

    run_id = "r"

    def __init__(self) -> None:
        self.values: list[tuple[dict[str, Any], Any]] = []

    def log_metrics(self, values: Mapping[str, Any], step: int | None = None) -> None:
        self.values.append((dict(values), step))


def test_the_value_past_the_step_is_logged_then_training_stops() -> None:
    inner = Collected()
    sink = StoppingSink(inner, stop_after=2)
    for step in (0, 1, 2, None):
        sink.log_metrics({"loss": 1.0}, step=step)
    sink.log_metrics({"final": 1.0})  # no step: never a reason to stop
    with pytest.raises(TrainingStopped) as caught:
        sink.log_metrics({"loss": 0.5}, step=torch.tensor(3))
    assert caught.value.step == 3
    assert not isinstance(caught.value, Exception)  # a loop's ``except Exception`` lets it pass
    assert [int(s) if s is not None else None for _, s in inner.values] == [
        0,
        1,
        2,
        None,
        None,
        3,
    ]
    assert sink.run_id == "r"
