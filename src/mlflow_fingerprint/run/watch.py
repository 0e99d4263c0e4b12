"""``mfp.watch(model)``: where inside a training step two runs part.

At the watched steps, in execution order, every module's first input and output (forward), every
parameter's gradient as backward accumulates it, and every parameter after the optimizer's step
get an exact digest and a norm (``digest``). The comparator lines two runs' records up and names
the first tensor that differs (``compare/where.py``).

What a step is: the watch counts the optimizer's ``step()`` calls, from 0. Step ``k`` holds the
forward and backward passes that run after step ``k - 1``'s update and the update of step ``k``
itself, so with one ``optimizer.step()`` per loop iteration, step ``k`` is the ``step=k`` a loop
counting from 0 passes to ``mfp.log_metrics``. The optimizer is the one given, else the first
whose ``step()`` updates the model's parameters. Forward passes under ``torch.no_grad()``
(evaluation) are not recorded.

Cost: between watched steps only one optimizer post-hook runs (a counter); the module and
gradient hooks are installed for a watched step and removed after its update, and everything is
removed once the last watched step is done. Watching no step installs nothing. On the training
thread only the reductions run (a few integer kernels per tensor, on its device, no host copy);
the digests are read, and the records written, by the run's writer thread
(``fingerprint/numerics/steps.jsonl``, once: after the last watched step, or when the run ends,
failed or not; a process killed outright loses them). Uploading it after every watched step was
measured to cost more, in the writer's threads competing with training, than the reductions
themselves. A step the run ended inside (an exception in backward, a loop that stops between a
forward pass and its update) is written as far as it got, its records marked ``partial``: the
comparator then compares what both runs recorded and never reads a missing phase as a
difference.

Under DDP the run is rank 0's, and its ``steps.jsonl`` holds rank 0's view: rank 0's inputs and
outputs, the gradients as rank 0's backward accumulates them (its own, before DDP's averaged
values replace them), the parameters after the update (the same on every rank). With the run's
``metrics="per_rank"``, every other rank watches its own replica too, into rank 0's run as
``steps.rank<N>.jsonl`` (``layout.steps_artifact``); otherwise the other ranks watch nothing and
install no hook. A model wrapped in ``DistributedDataParallel`` (or ``DataParallel``) is watched
through the module it wraps: the paths are the inner model's (``features.0``, not
``module.features.0``), the same as a single-process run's, so the two compare.

``MLFLOW_FINGERPRINT_WATCH_STEPS`` (``20`` or ``20,21``) adds steps to every watch's own:
``fingerprint rerun`` sets it to the step where the curves part, so the rerun records that step.
A value that does not parse is ignored with one warning.

Under ``torch.compile``, the watch hooks the compiled module itself (the wrapper's
``_orig_mod``, so paths match an uncompiled run's). Gradients and updated parameters are always
observed: autograd and the optimizer run them outside the compiled graph. Forward hooks are seen
only where Dynamo compiles with them in place: by default it does not guard on hooks
(``torch._dynamo.config.skip_nnmodule_hook_guards``), so hooks installed after the first compile
do not fire. Watching step 0 (the default does), before the first forward, records that step's
inputs and outputs, in a forward compiled in pieces around the hooks (a 3-layer MLP under
inductor: 23 graphs for 4 steps, against 1 unwatched), which may fuse and round differently from
the unwatched graph; later watched steps record forward tensors only where Dynamo recompiled.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from .. import layout
from ..errors import warn
from ..model.vocabulary import Phase
from ..model.watched import INPUT, OUTPUT, TensorRecord, encode
from ..settings import settings
from ..tracking.events import Artifact
from . import current
from .digest import Pending, Weights, reduce

FIRST_STEPS = 3
MAX_DEFAULT_STEPS = 12
MAX_OUTPUT_TENSORS = 8  # of a module returning a tuple or dict, the first this many are watched


def default_steps(first: int = FIRST_STEPS, count: int = MAX_DEFAULT_STEPS) -> tuple[int, ...]:
    """The first ``first`` steps, then the powers of two, ``count`` steps in all: 0, 1, 2, 4, 8,
    ... 1024. Early steps are where seeds, initial weights and data order part; the sparse sample
    catches what parts later at a cost that shrinks with the run's length."""
    steps = list(range(first))
    power = 1
    while len(steps) < count:
        if power >= first:
            steps.append(power)
        power *= 2
    return tuple(steps)


def _steps(steps: Iterable[int] | None) -> frozenset[int]:
    if steps is None:
        return frozenset(default_steps())
    chosen = frozenset(steps)
    if any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in chosen):
        raise ValueError(f"steps must be non-negative integers; got {sorted(chosen, key=str)}")
    return chosen


@dataclass(frozen=True)
class _Taken:
    """A record whose digest and norm are still being computed on the tensor's device."""

    step: int
    phase: Phase
    module: str
    kind: str
    tensor: str
    call: int
    pending: Pending
    partial: bool = False  # the run ended inside this step

    def record(self) -> TensorRecord:
        digest, norm = self.pending.value()
        p = self.pending
        return TensorRecord(
            self.step, self.phase, self.module, self.kind, self.tensor, self.call,
            p.dtype, p.shape, digest, norm, self.partial,
        )  # fmt: skip


def _inner(model: Any) -> Any:
    """The module whose paths the records carry: the one a ``torch.compile`` wrapper compiled or a
    ``DistributedDataParallel`` (``DataParallel``) wrapper replicates, so a wrapped model's
    records line up with an unwrapped run's."""
    from torch import nn

    wrappers = (nn.parallel.DistributedDataParallel, nn.DataParallel)
    while True:
        if isinstance(model, wrappers):
            model = model.module
        elif isinstance(getattr(model, "_orig_mod", None), nn.Module):
            model = model._orig_mod
        else:
            return model


def _tensors(value: Any) -> list[Any]:
    """The tensors in a module's output, in order (a tensor, or the leaves of a tuple/dict)."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    from torch.utils._pytree import tree_leaves

    return [v for v in tree_leaves(value) if isinstance(v, torch.Tensor)][:MAX_OUTPUT_TENSORS]


def _first_input(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    import torch

    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value
    return None


class Watch:
    """The hooks of one watched model, and the records they took. ``close()`` removes every
    hook (the run's end does it too)."""

    def __init__(
        self,
        model: Any,
        steps: frozenset[int],
        writer: Any,
        optimizer: Any,
        artifact: str = layout.STEPS_ARTIFACT,
    ) -> None:
        self.steps = steps
        self.step = 0
        self._model = _inner(model)
        self._writer = writer
        self._artifact = artifact  # this rank's file
        self._optimizer = optimizer  # None: the first optimizer that updates the model
        self._params = {id(p) for p in self._model.parameters()}
        self._weights = Weights()
        self._taken: list[_Taken] = []  # the watched step under way
        self._done: list[_Taken] = []  # the watched steps completed, not yet written
        self._calls: dict[tuple[str, str, str], int] = {}
        # tensors already reduced in this step: a module's input is mostly the previous output
        self._seen: dict[int, tuple[Any, int, Pending]] = {}
        self._step_hooks: list[Any] = []
        self._optimizer_hook: Any = None
        self._lock = threading.Lock()
        self.closed = False

    # -- installing and removing --------------------------------------------------------------

    def start(self) -> Watch:
        if not self.steps:
            self.closed = True
            return self
        from torch.optim.optimizer import register_optimizer_step_post_hook

        if self._optimizer is not None:
            self._optimizer_hook = self._optimizer.register_step_post_hook(self._after_update)
        else:
            self._optimizer_hook = register_optimizer_step_post_hook(self._after_update)
        if 0 in self.steps:
            self._arm()
        return self

    def _arm(self) -> None:
        """Hooks for one watched step: inputs, outputs, gradients."""
        for path, module in self._model.named_modules():
            kind = type(module).__name__
            self._step_hooks.append(
                module.register_forward_pre_hook(self._input_hook(path, kind), with_kwargs=True)
            )
            self._step_hooks.append(module.register_forward_hook(self._output_hook(path, kind)))
        modules = dict(self._model.named_modules())
        for name, param in self._model.named_parameters():
            if param.requires_grad:
                path, _, local = name.rpartition(".")
                kind = type(modules.get(path, self._model)).__name__
                self._step_hooks.append(
                    param.register_post_accumulate_grad_hook(self._grad_hook(path, kind, local))
                )

    def _disarm(self) -> None:
        for handle in self._step_hooks:
            handle.remove()
        self._step_hooks.clear()
        self._calls.clear()
        self._seen.clear()

    def close(self) -> None:
        """Remove every hook and write what the watched steps took: a step the run ended
        inside, as far as it got, marked partial."""
        with self._lock:
            self._finish()

    def _finish(self) -> None:
        if self._optimizer_hook is not None:
            self._optimizer_hook.remove()
            self._optimizer_hook = None
        self._disarm()
        self._done.extend(replace(t, partial=True) for t in self._taken)
        self._taken.clear()
        self.closed = True
        self._emit()

    # -- hooks (training thread) --------------------------------------------------------------

    def _take(self, phase: Phase, path: str, kind: str, tensor_name: str, value: Any) -> None:
        key = (phase, path, tensor_name)
        call = self._calls.get(key, 0)
        self._calls[key] = call + 1
        pending = self._reduce(value)
        self._taken.append(_Taken(self.step, phase, path, kind, tensor_name, call, pending))

    def _reduce(self, tensor: Any) -> Pending:
        """The tensor's reductions, computed once per step for one unchanged tensor."""
        version = getattr(tensor, "_version", None)
        seen = self._seen.get(id(tensor))
        if seen is not None and seen[0] is tensor and seen[1] == version:
            return seen[2]
        pending = reduce(tensor, self._weights)
        if version is not None:
            self._seen[id(tensor)] = (tensor, version, pending)
        return pending

    def _input_hook(self, path: str, kind: str) -> Any:
        def hook(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            import torch

            if not torch.is_grad_enabled():
                return
            first = _first_input(args, kwargs)
            if first is not None:
                self._take("forward", path, kind, INPUT, first)

        return hook

    def _output_hook(self, path: str, kind: str) -> Any:
        def hook(module: Any, args: tuple[Any, ...], output: Any) -> None:
            import torch

            if not torch.is_grad_enabled():
                return
            tensors = _tensors(output)
            for i, tensor in enumerate(tensors):
                name = OUTPUT if len(tensors) == 1 else f"{OUTPUT}.{i}"
                self._take("forward", path, kind, name, tensor)

        return hook

    def _grad_hook(self, path: str, kind: str, local: str) -> Any:
        def hook(param: Any) -> None:
            if param.grad is not None:
                self._take("backward", path, kind, local, param.grad)

        return hook

    def _ours(self, optimizer: Any) -> bool:
        if self._optimizer is not None:
            return optimizer is self._optimizer
        if any(id(p) in self._params for g in optimizer.param_groups for p in g["params"]):
            self._optimizer = optimizer  # from now on, only this one counts the steps
            return True
        return False

    def _after_update(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.closed or not self._ours(optimizer):
            return
        with self._lock:
            if self.closed:
                return
            if self.step in self.steps:
                modules = dict(self._model.named_modules())
                for name, param in self._model.named_parameters():
                    path, _, local = name.rpartition(".")
                    kind = type(modules.get(path, self._model)).__name__
                    self._take("optimizer", path, kind, local, param)
                self._disarm()
                self._done.extend(self._taken)
                self._taken.clear()
            self.step += 1
            if self.step > max(self.steps):
                self._finish()
            elif self.step in self.steps:
                self._arm()

    # -- writing (the writer's thread) --------------------------------------------------------

    def _emit(self) -> None:
        """Queue the file on the run's writer, once the watching is over (after the last watched
        step, or at the run's end): one upload per run, none while training runs between."""
        done, self._done = self._done, []
        if not done:
            return

        def produce() -> bytes:
            return encode(t.record() for t in done)

        self._writer.record(Artifact(self._artifact, layout.NUMERICS_DIR), produce)


def _writer_of_this_rank(sink: Any) -> tuple[Any, int]:
    """The writer that takes this process's records, and the rank they are filed under: the
    run's; under torchrun, rank 0's run, from rank 0 and (``metrics="per_rank"``) from the other
    ranks, which hold a writer into it then; None on the other ranks otherwise."""
    ranks = getattr(sink, "ranks", None)
    if ranks is None:
        return sink, 0
    if ranks.rank == 0 or sink.mode == "per_rank":
        return sink.writer, ranks.rank
    return None, ranks.rank


def watch(model: Any, steps: Iterable[int] | None = None, *, optimizer: Any = None) -> Watch:
    """Record, at ``steps`` (default: :func:`default_steps`), an exact digest and the norm of
    every module's input and output, every gradient and every updated parameter of ``model``,
    into the current ``fingerprinted`` run as ``fingerprint/numerics/steps.jsonl``.

    Call it inside the run, after building the model (and before its first step).
    ``fingerprint diff`` then names the first tensor where two runs part. ``steps=()`` watches
    nothing and installs no hook (unless ``MLFLOW_FINGERPRINT_WATCH_STEPS`` names steps: a
    rerun's). The hooks go when the run ends or on ``close()``.
    """
    chosen = _steps(steps)
    sink = current.current()
    if sink is None:
        warn("mlflow-fingerprint: watch() called outside a fingerprinted run; nothing is watched")
    writer, rank = _writer_of_this_rank(sink) if sink is not None else (None, 0)
    handle = watch_into(writer, model, chosen, optimizer, rank=rank)
    if not handle.closed:
        current.on_leave(handle.close)
    return handle


def watch_into(
    writer: Any,
    model: Any,
    steps: Iterable[int] | None = None,
    optimizer: Any = None,
    *,
    rank: int = 0,
) -> Watch:
    """Watch ``model`` into the run of ``writer`` (a run's writer, with ``record``): the trainer
    callbacks, which hold their run's writer rather than a ``fingerprinted`` run, and close the
    returned watch themselves. A None writer (another rank's process) watches nothing; ``rank``
    names the file (``layout.steps_artifact``)."""
    if writer is None:
        return Watch(model, frozenset(), None, optimizer).start()
    chosen = _steps(steps) | frozenset(settings().watch_steps)
    return Watch(model, chosen, writer, optimizer, layout.steps_artifact(rank)).start()
