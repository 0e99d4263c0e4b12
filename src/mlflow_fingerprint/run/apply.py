"""Controlled reruns: the values ``MLFLOW_FINGERPRINT_APPLY`` forces on a run, and the step
``MLFLOW_FINGERPRINT_STOP_AFTER`` ends it at; parsed here, and only here, so that the
``fingerprint rerun --set FIELD=VALUE`` command and the decorator refuse the same things.

The keys are the fingerprint's own field paths (``seeds.requested``, ``data.num_workers``, ...),
so a field of a diff can be passed straight through, and the fingerprint captured after they are
applied shows the forced values where the comparator looks for them.

Applying happens at three places, each undone the way its kind of state is:

- process switches (environment variables, cuDNN flags, fp32 precision, threads):
  ``apply_environment`` before seeding (CUBLAS_WORKSPACE_CONFIG is read when determinism is
  switched on), ``apply_switches`` after ``deterministic=`` (an explicit flag wins over what
  determinism implies); both undone at the end of the run, as ``deterministic=`` is;
- the seed and ``deterministic``: handed to the decorator's own ``seed=``/``deterministic=``
  (``forced_seed``, ``forced_deterministic``), so they behave exactly as those arguments;
- DataLoaders: ``LoaderOverrides.adjust``, called for every loader a run describes (those passed
  in, and every one iterated while the run is open, wherever it was built). Loaders keep the
  forced values after the run: undoing them under a loader the user still holds would change it
  behind their back.
"""

from __future__ import annotations

import functools
import json
import os
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, cast

from ..errors import BadOverride, warn
from ..model.fields import (
    DATA,
    DATA_GENERATOR_SEED,
    DATA_NUM_WORKERS,
    DATA_WORKER_SEEDING,
    DETERMINISM_CUDNN_BENCHMARK,
    DETERMINISM_CUDNN_DETERMINISTIC,
    DETERMINISM_DETERMINISTIC_ALGORITHMS,
    DETERMINISM_ENV,
    NUMERICS_ENV,
    NUMERICS_FP32_PRECISION,
    SEEDS_REQUESTED,
    TORCH_THREADS_INTER_OP,
    TORCH_THREADS_INTRA_OP,
)
from ..model.variables import RERUN_ENV, rerun_may_set, settable_value
from ..settings import APPLY, STOP_AFTER
from .seeding import MAX_SEED, optional_torch, seed_worker

Kind = Literal["seed", "flag", "precision", "threads", "workers", "env"]
Value = int | bool | str | None

# torch's fp32 precision per backend node: the attribute holding it (torch 2.9+), and the
# legacy boolean that means tf32 when True (older torch). The same nodes as the numerics probe.
PRECISION_NODES: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "cuda_matmul": ("backends.cuda.matmul", "backends.cuda.matmul.allow_tf32"),
        "cudnn_conv": ("backends.cudnn.conv", "backends.cudnn.allow_tf32"),
        "cudnn_rnn": ("backends.cudnn.rnn", "backends.cudnn.allow_tf32"),
        "mkldnn_matmul": ("backends.mkldnn.matmul", "backends.mkldnn.allow_tf32"),
        "mkldnn_conv": ("backends.mkldnn.conv", "backends.mkldnn.allow_tf32"),
        "mkldnn_rnn": ("backends.mkldnn.rnn", "backends.mkldnn.allow_tf32"),
    }
)
PRECISIONS = ("ieee", "tf32", "bf16")  # bf16: oneDNN (mkldnn_*) only; CUDA refuses it

PRECISION_PREFIX = NUMERICS_FP32_PRECISION.prefix
ENV_PREFIXES = (DETERMINISM_ENV.prefix, NUMERICS_ENV.prefix)

FIELDS: Mapping[str, Kind] = MappingProxyType(
    {
        SEEDS_REQUESTED: "seed",
        DETERMINISM_DETERMINISTIC_ALGORITHMS: "flag",
        DETERMINISM_CUDNN_BENCHMARK: "flag",
        DETERMINISM_CUDNN_DETERMINISTIC: "flag",
        **{PRECISION_PREFIX + node: "precision" for node in PRECISION_NODES},
        TORCH_THREADS_INTRA_OP: "threads",
        TORCH_THREADS_INTER_OP: "threads",
        DATA_NUM_WORKERS: "workers",
        DATA_GENERATOR_SEED: "seed",
        DATA_WORKER_SEEDING: "flag",
    }
)
# Every field a rerun can set; ``*`` stands for an environment variable's name.
SETTABLE_FIELDS: tuple[str, ...] = (*FIELDS, *(prefix + "*" for prefix in ENV_PREFIXES))

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def field_kind(name: str) -> Kind:
    """The kind of value ``name`` takes; BadOverride for a field no rerun can set."""
    kind = FIELDS.get(name)
    if kind is not None:
        return kind
    for prefix in ENV_PREFIXES:
        if name.startswith(prefix):
            variable = name[len(prefix) :]
            if rerun_may_set(variable):
                return "env"
            raise BadOverride(
                f"{variable!r} is not an environment variable a rerun may set (allowed: "
                f"{', '.join(sorted(RERUN_ENV))})"
            )
    raise BadOverride(
        f"{name!r} is not a field a rerun can set (settable: {', '.join(SETTABLE_FIELDS)})"
    )


def _int(name: str, value: Any, low: int, high: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadOverride(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bounds = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise BadOverride(f"{name} must be an integer {bounds}, got {value}")
    return value


def check_value(name: str, value: Any) -> Value:
    """``value`` (as JSON gives it) if it is one ``name`` takes; BadOverride saying why not."""
    kind = field_kind(name)
    if kind == "seed":
        return _int(name, value, 0, MAX_SEED)
    if kind == "threads":
        return _int(name, value, 1, None)
    if kind == "workers":
        return _int(name, value, 0, None)
    if kind == "flag":
        if not isinstance(value, bool):
            raise BadOverride(f"{name} must be true or false, got {value!r}")
        return value
    if kind == "precision":
        node = name[len(PRECISION_PREFIX) :]
        allowed = PRECISIONS if node.startswith("mkldnn") else PRECISIONS[:2]
        if value not in allowed:
            raise BadOverride(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
        return str(value)
    if not settable_value(value):
        raise BadOverride(
            f"{name} must be a line of printable text or null (unset), got {str(value)[:40]!r}"
        )
    return value


def parse_override(name: str, text: str) -> tuple[str, Value]:
    """``(name, value)`` from a command line's ``FIELD=VALUE`` text: ``0`` for a number,
    ``true``/``false`` (or 1/0, yes/no, on/off) for a flag, ``ieee``/``tf32``/``bf16`` for a
    precision, the text itself for an environment variable (``null``: unset it)."""
    kind = field_kind(name)
    word = text.strip()
    value: Any = word
    if kind in ("seed", "threads", "workers"):
        try:
            value = int(word)
        except ValueError:
            raise BadOverride(f"{name} must be an integer, got {text!r}") from None
    elif kind == "flag":
        lowered = word.lower()
        if lowered not in (*_TRUE, *_FALSE):
            raise BadOverride(f"{name} must be true or false, got {text!r}")
        value = lowered in _TRUE
    elif kind == "precision":
        value = word.lower()
    elif kind == "env":
        value = None if word == "null" else text
    return name, check_value(name, value)


@dataclass(frozen=True)
class Overrides:
    """The field values a run is to be forced to, each checked (``check_value``)."""

    values: Mapping[str, Value] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        checked = {name: check_value(name, v) for name, v in sorted(self.values.items())}
        object.__setattr__(self, "values", MappingProxyType(checked))

    @classmethod
    def parse(cls, text: str) -> Overrides:
        """The overrides of a JSON object ``{field: value}``; BadOverride naming the variable."""
        try:
            loaded = json.loads(text)
        except ValueError as exc:
            raise BadOverride(f"{APPLY} is not JSON ({exc})") from None
        if not isinstance(loaded, dict):
            raise BadOverride(f"{APPLY} must be a JSON object {{field: value}}, got {text!r}")
        try:
            return cls(loaded)
        except BadOverride as exc:
            raise BadOverride(f"{APPLY}: {exc}") from None

    def canonical(self) -> str:
        """The ``fingerprint.overrides`` tag: sorted keys, compact, so equal sets compare equal."""
        return json.dumps(dict(self.values), sort_keys=True, separators=(",", ":"))

    def get(self, name: str) -> Value:
        return self.values.get(name)

    def environment(self) -> dict[str, str | None]:
        """The environment variables to set (None: unset), by name."""
        out: dict[str, str | None] = {}
        for name, value in self.values.items():
            for prefix in ENV_PREFIXES:
                if name.startswith(prefix):
                    out[name[len(prefix) :]] = value  # type: ignore[assignment]
        return out

    def touches_loaders(self) -> bool:
        return any(name.startswith(DATA.prefix) for name in self.values)


def overrides_from_env(environ: Mapping[str, str] | None = None) -> Overrides:
    """``MLFLOW_FINGERPRINT_APPLY`` of ``environ`` (default ``os.environ``); none when unset."""
    text = (os.environ if environ is None else environ).get(APPLY, "")
    return Overrides.parse(text) if text.strip() else Overrides()


def parse_stop_after(text: str) -> int:
    """The step ``MLFLOW_FINGERPRINT_STOP_AFTER`` names: an integer >= 0."""
    try:
        step = int(text.strip())
    except ValueError:
        raise BadOverride(f"{STOP_AFTER} must be a step (an integer >= 0), got {text!r}") from None
    if step < 0:
        raise BadOverride(f"{STOP_AFTER} must be a step (an integer >= 0), got {step}")
    return step


def stop_after_from_env(environ: Mapping[str, str] | None = None) -> int | None:
    text = (os.environ if environ is None else environ).get(STOP_AFTER, "")
    return parse_stop_after(text) if text.strip() else None


def forced_seed(overrides: Overrides, seed: int | None) -> int | None:
    """The seed the run uses: the forced one, else the decorator's ``seed=``."""
    forced = overrides.get(SEEDS_REQUESTED)
    return seed if forced is None else int(forced)


def forced_deterministic(overrides: Overrides, deterministic: bool | str) -> bool | str:
    """The decorator's ``deterministic=`` under the overrides: a forced True keeps ``"warn"``
    (warn-only is another field), a forced False turns it off."""
    forced = overrides.get(DETERMINISM_DETERMINISTIC_ALGORITHMS)
    if forced is None:
        return deterministic
    if forced:
        return deterministic if deterministic == "warn" else True
    return False


# -- process switches -------------------------------------------------------------------------


@dataclass(frozen=True)
class Applied:
    """What an ``apply_*`` call changed, to record and to undo at the end of the run."""

    actions: tuple[str, ...] = ()
    restore: tuple[Callable[[], None], ...] = ()

    def undo(self) -> None:
        for fn in reversed(self.restore):
            try:
                fn()
            except Exception as exc:  # one switch that cannot go back must not skip the others
                warn(f"mlflow-fingerprint: could not restore a switch after the run: {exc}")


def apply_environment(overrides: Overrides) -> Applied:
    """Set (or unset) the forced environment variables; the previous values come back at the
    end. The rerun launcher puts them in the child's environment too: setting them again here
    is harmless, and covers a run opened by hand with the variable set."""
    actions, restore = [], []
    for name, value in overrides.environment().items():
        old = os.environ.get(name)
        if value is None:
            os.environ.pop(name, None)
            actions.append(f"unset {name}")
        else:
            os.environ[name] = value
            actions.append(f"{name}={value}")
        restore.append(functools.partial(_put_env, name, old))
    return Applied(tuple(actions), tuple(restore))


def _put_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def _node(torch: Any, path: str) -> Any:
    obj = torch
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _set_attr(obj: Any, attr: str, value: Any) -> Callable[[], None]:
    """Set ``obj.attr``; returns what puts the old value back."""
    old = getattr(obj, attr)
    setattr(obj, attr, value)
    return functools.partial(setattr, obj, attr, old)


def _precision(torch: Any, node: str, value: str) -> tuple[str, Callable[[], None]]:
    """Set one backend's fp32 precision: the ``fp32_precision`` string (torch 2.9+), else the
    legacy ``allow_tf32`` boolean (which has no bf16)."""
    path, legacy = PRECISION_NODES[node]
    target = _node(torch, path)
    if hasattr(target, "fp32_precision"):
        return f"{path}.fp32_precision={value}", _set_attr(target, "fp32_precision", value)
    if value == "bf16":
        raise RuntimeError(f"this torch has no bf16 precision for {node}")
    owner, attr = legacy.rsplit(".", 1)
    flag = value == "tf32"
    return f"{legacy}={flag}", _set_attr(_node(torch, owner), attr, flag)


def _deterministic_off(torch: Any) -> tuple[str, Callable[[], None]]:
    old = torch.are_deterministic_algorithms_enabled()
    old_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(False)
    return "use_deterministic_algorithms(False)", functools.partial(
        torch.use_deterministic_algorithms, old, warn_only=old_warn
    )


def apply_switches(overrides: Overrides) -> Applied:
    """Set the forced torch switches: cuDNN flags, fp32 precision per backend, threads, and
    deterministic algorithms off (``forced_deterministic`` switches them on, through
    ``apply_determinism``). Undone at the end, except the inter-op thread count, which torch
    lets a process set only once. A switch this torch refuses is one warning; the fingerprint
    captured afterwards shows what the switch really holds."""
    torch = optional_torch()
    if torch is None:
        if overrides.values:
            warn("mlflow-fingerprint: torch is not available: no torch switch was forced")
        return Applied()
    actions: list[str] = []
    restore: list[Callable[[], None]] = []
    for name, value in overrides.values.items():
        try:
            done = _switch(torch, name, value)
        except Exception as exc:
            warn(f"mlflow-fingerprint: {APPLY}: could not set {name}={value!r}: {exc}")
            continue
        if done is not None:
            actions.append(done[0])
            if done[1] is not None:
                restore.append(done[1])
    return Applied(tuple(actions), tuple(restore))


def _switch(torch: Any, name: str, value: Any) -> tuple[str, Callable[[], None] | None] | None:
    cudnn = torch.backends.cudnn
    if name == DETERMINISM_CUDNN_BENCHMARK:
        return f"cudnn.benchmark={value}", _set_attr(cudnn, "benchmark", value)
    if name == DETERMINISM_CUDNN_DETERMINISTIC:
        return f"cudnn.deterministic={value}", _set_attr(cudnn, "deterministic", value)
    if name == DETERMINISM_DETERMINISTIC_ALGORITHMS and value is False:
        return _deterministic_off(torch)
    if name.startswith(PRECISION_PREFIX):
        return _precision(torch, name[len(PRECISION_PREFIX) :], value)
    if name == TORCH_THREADS_INTRA_OP:
        old = torch.get_num_threads()
        torch.set_num_threads(value)
        return f"set_num_threads({value})", functools.partial(torch.set_num_threads, old)
    if name == TORCH_THREADS_INTER_OP:
        torch.set_num_interop_threads(value)  # raises once parallel work has started
        return f"set_num_interop_threads({value})", None
    return None


# -- DataLoaders ------------------------------------------------------------------------------


def seeded_worker_init(user_init: Callable[[int], Any], worker_id: int) -> None:
    """``worker_init_fn`` under ``data.worker_seeding``: seed python and numpy from the worker's
    torch seed (``seed_worker``), then run the loader's own ``worker_init_fn``. Module-level
    (bound with ``functools.partial``) so spawned workers can unpickle it."""
    seed_worker(worker_id)
    user_init(worker_id)


@dataclass(frozen=True)
class LoaderOverrides:
    """Forces ``data.*`` on DataLoaders, once per loader per run: a loader's generator is
    created the first time the run sees it and kept, so its epochs still shuffle differently."""

    overrides: Overrides
    _done: weakref.WeakKeyDictionary[Any, bool] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, compare=False, repr=False
    )

    def adjust(self, loader: Any) -> None:
        """Apply the forced ``data.*`` values to ``loader`` (a no-op the second time)."""
        try:
            if self._done.get(loader):
                return
            self._done[loader] = True
        except TypeError:  # not weak-referenceable: adjusted at each sighting, still correct
            pass
        try:
            self._adjust(loader)
        except Exception as exc:  # a loader that refuses: say so; its record shows what it holds
            warn(f"mlflow-fingerprint: {APPLY}: could not adjust a DataLoader: {exc}")

    def _adjust(self, loader: Any) -> None:
        o = self.overrides
        workers = cast("int | None", o.get(DATA_NUM_WORKERS))  # check_value: an int or absent
        if workers is not None and workers != loader.num_workers:
            loader.num_workers = workers
            # as DataLoader's constructor does: a prefetch factor only with workers
            loader.prefetch_factor = 2 if workers > 0 else None
        seed = o.get(DATA_GENERATOR_SEED)
        if seed is not None:
            torch = optional_torch()
            generator = torch.Generator()
            generator.manual_seed(int(seed))
            loader.generator = generator  # the workers' base seed is drawn from it
            sampler = getattr(loader, "sampler", None)
            # A RandomSampler made by the constructor holds the generator it was given (None:
            # a fresh seed from the global RNG each epoch), not the loader's attribute.
            if sampler is not None and hasattr(sampler, "generator"):
                sampler.generator = generator
        # worker_seeding false leaves the loader's own worker_init_fn as it is: there is no
        # seeding to take away from a function that is the user's
        if o.get(DATA_WORKER_SEEDING):
            user = loader.worker_init_fn
            if user is None:
                loader.worker_init_fn = seed_worker
            elif user is not seed_worker and not _seeded(user):
                loader.worker_init_fn = functools.partial(seeded_worker_init, user)


def _seeded(init: Any) -> bool:
    return isinstance(init, functools.partial) and init.func is seeded_worker_init
