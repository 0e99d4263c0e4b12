"""``FingerprintCallback``: the fingerprint of a Keras ``model.fit``, in its MLflow run.

    model.fit(x, y, batch_size=64, epochs=3, callbacks=[FingerprintCallback()])

At ``on_train_begin``, when the program has set TensorFlow up (its global seed, op determinism,
TF32, threads), it captures this process with the batch size and epochs ``fit`` was given, and
records that into the run to log into:

1. the ``fingerprinted`` run current in this context (a decorated function that calls ``fit``):
   that run records its own fingerprint when the function returns, TensorFlow imported and set by
   then, so the callback adds only the fit's metrics;
2. else the active MLflow run: the one MLflow's Keras autolog opened for this fit
   (``mlflow.keras.autolog()``), or the user's ``mlflow.start_run()``;
3. else a run of its own (``mlflow.start_run()``), ended when the fit ends. A fit that raises
   never reaches ``on_train_end``; that run is then left open, as MLflow's autolog leaves its own.

Metrics go through the run's writer, so the training thread never waits on MLflow: each batch's
logs as ``batch_<name>`` (step: batches since the fit began) and each epoch's as ``<name>``
(step: the epoch), the names MLflow's own Keras callback uses. Where MLflow's callback already
logs this fit (autolog), this one logs no metrics, so no value reaches MLflow twice.

Keras hands a callback ``epochs`` and ``steps`` (``params``) but not the batch size; that is
read from ``fit``'s own arguments on the call stack, and stays unknown if they cannot be found.
Importing this module imports Keras (and so its backend).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any

import keras
import numpy

from .. import layout
from ..capture import RunInfo, capture
from ..capture.first_step import SAMPLE_BYTES, SAMPLE_OVER_BYTES, Digest, batch_record, sampling
from ..errors import warn
from ..model.fingerprint import Fingerprint, unavailable
from ..run import current
from . import _record

INTEGRATION = "keras"
# How far up the stack ``fit`` may be from the callback hook: CallbackList, then fit itself
# (with a wrapper or two between, such as TensorFlow's traceback filter or MLflow's autolog).
MAX_FRAMES = 8
DEFAULT_BATCH_SIZE = 32  # fit's, where it is given none


@dataclass(frozen=True)
class FitArguments:
    """What ``fit`` was given, and whether MLflow's own Keras callback logs this fit."""

    batch_size: int | None
    epochs: int | None
    mlflow_logs_metrics: bool
    # The first batch, where fit was given arrays it does not shuffle: Keras hands a callback
    # only the batch's index. Else why it is not known.
    first_batch: Any = None


def _fit_frame(model: Any, frame: FrameType | None) -> FrameType | None:
    for _ in range(MAX_FRAMES):
        if frame is None:
            return None
        if frame.f_code.co_name == "fit" and frame.f_locals.get("self") is model:
            return frame
        frame = frame.f_back
    return None


def _is_mlflow_callback(callback: Any) -> bool:
    return type(callback).__module__.split(".")[0] == "mlflow"


def fit_arguments(model: Any, params: Mapping[str, Any], frame: FrameType | None) -> FitArguments:
    """``fit``'s batch size (from its frame, found from ``frame`` upwards) and epochs (from the
    callback ``params``); whether an MLflow callback is among the fit's callbacks."""
    fit = _fit_frame(model, frame)
    local = fit.f_locals if fit is not None else {}
    batch_size = local.get("batch_size")
    epochs = params.get("epochs", local.get("epochs"))
    callbacks = local.get("callbacks")
    members = getattr(callbacks, "callbacks", callbacks) or []
    return FitArguments(
        batch_size=batch_size if isinstance(batch_size, int) else None,
        epochs=epochs if isinstance(epochs, int) else None,
        mlflow_logs_metrics=any(_is_mlflow_callback(c) for c in members),
        first_batch=_first_batch(local),
    )


def _first_batch(local: Mapping[str, Any]) -> Any:
    """``[x[:n], y[:n]]`` of arrays fit takes in order (``shuffle=False``); else unavailable."""
    x, y = local.get("x"), local.get("y")
    if x is None or not hasattr(x, "shape") or not hasattr(x, "tobytes"):
        return unavailable("fit was not given arrays: Keras hands callbacks no batch")
    if local.get("shuffle", True) is not False:
        return unavailable("fit shuffles its arrays: Keras hands callbacks no batch")
    size = local.get("batch_size") or DEFAULT_BATCH_SIZE
    return [x[:size], *([y[:size]] if y is not None and hasattr(y, "tobytes") else [])]


def _variable(digest: Digest, variable: Any) -> None:
    """One Keras variable into ``digest``: whole where small, else a strided sample of it (only
    those elements are converted to a host array)."""
    shape = tuple(int(d) for d in variable.shape)
    elements = math.prod(shape)
    itemsize = numpy.dtype(keras.backend.standardize_dtype(variable.dtype)).itemsize
    if elements * itemsize <= SAMPLE_OVER_BYTES:
        data, sampled = keras.ops.convert_to_numpy(variable).tobytes(), False
    else:
        stride = -(-elements // max(1, SAMPLE_BYTES // itemsize))
        flat = keras.ops.reshape(variable, (-1,))[::stride]
        data, sampled = keras.ops.convert_to_numpy(flat).tobytes(), True
    digest.add(shape, variable.dtype, data, sampled, elements)


def weights(model: Any) -> dict[str, Any]:
    """The model's trainable variables (what its optimizer updates), as ``first_step.weights``."""
    digest = Digest()
    for variable in model.trainable_variables:
        _variable(digest, variable)
    group = digest.record()
    return {**group, "groups": [group], "sampling": sampling()}


def first_step(model: Any, fit: FitArguments | None) -> dict[str, Any]:
    """What the fit's first batch starts from (``first_step``), each part ``unavailable`` where
    it cannot be read."""
    found: dict[str, Any] = {"recorded_by": INTEGRATION}
    try:
        found["weights"] = weights(model)
    except Exception as exc:
        found["weights"] = unavailable(f"{type(exc).__name__}")
    batch = fit.first_batch if fit is not None else None
    if isinstance(batch, list):
        try:
            found["batch"] = batch_record(batch, None)
        except Exception as exc:
            found["batch"] = unavailable(f"{type(exc).__name__}")
    else:
        found["batch"] = batch if batch is not None else unavailable("fit's arguments not found")
    return found


def _warn(message: str) -> None:
    warn(f"mlflow-fingerprint: {message}")


def _numbers(logs: Mapping[str, Any] | None, prefix: str = "") -> dict[str, Any]:
    return {f"{prefix}{key}": value for key, value in (logs or {}).items()}


class FingerprintCallback(keras.callbacks.Callback):
    """Record the fit's fingerprint and metrics in its MLflow run (see the module docstring).

    ``log_every_n_batches``: log batch metrics every n batches (0: epoch metrics only).
    """

    def __init__(self, flush_timeout_s: float = 30.0, log_every_n_batches: int = 1) -> None:
        super().__init__()
        if isinstance(log_every_n_batches, bool) or not isinstance(log_every_n_batches, int):
            raise TypeError(f"log_every_n_batches must be an int, got {log_every_n_batches!r}")
        if log_every_n_batches < 0:
            raise ValueError(f"log_every_n_batches must be >= 0, got {log_every_n_batches}")
        self.flush_timeout_s = flush_timeout_s
        self.log_every_n_batches = log_every_n_batches
        self.fingerprint: Fingerprint | None = None
        self.run_id: str | None = None
        self.fit: FitArguments | None = None
        self._sink: current.MetricSink | None = None
        self._writer: Any = None
        self._owns_run = False
        self._batches = 0
        self._first_step_done = False

    # -- start -------------------------------------------------------------------------------

    def on_train_begin(self, logs: Mapping[str, Any] | None = None) -> None:
        self._batches = 0
        self._first_step_done = False
        try:
            self.fit = fit_arguments(self.model, self.params or {}, sys._getframe(1))
            self._start(self.fit)
        except Exception as exc:  # recording must never stop the fit
            _warn(f"could not record the fingerprint: {type(exc).__name__}: {exc}")

    def _start(self, fit: FitArguments) -> None:
        outer = current.current()
        if outer is not None:  # a fingerprinted run: it records the fingerprint itself
            self.run_id = outer.run_id
            self._sink = None if fit.mlflow_logs_metrics else outer
            return
        import mlflow

        active = mlflow.active_run()
        if active is None:
            active = mlflow.start_run()
            self._owns_run = True
        self.fingerprint = capture(
            run=RunInfo(
                declared={
                    k: v
                    for k, v in (("batch_size", fit.batch_size), ("epochs", fit.epochs))
                    if v is not None
                },
                stage="train_start",
            )
        )
        spool_id = active.data.tags.get(layout.INTERNAL_SPOOL_ID)
        _record.take_over_from_provider(spool_id)
        self._writer = _record.record_into_run(
            active.info.run_id,
            mlflow.get_tracking_uri(),
            self.fingerprint,
            {layout.TAG_INTEGRATION: INTEGRATION},
        )
        self.run_id = active.info.run_id
        self._sink = None if fit.mlflow_logs_metrics else self._writer

    # -- metrics -----------------------------------------------------------------------------

    def on_train_batch_begin(self, batch: int, logs: Mapping[str, Any] | None = None) -> None:
        """At the fit's first batch only: the initial weights and the batch, into the run's
        fingerprint (``first_step``)."""
        if self._first_step_done:
            return
        self._first_step_done = True
        if self.fingerprint is None or self._writer is None:
            return
        try:
            record = first_step(self.model, self.fit)
            self.fingerprint = _record.with_first_step(self.fingerprint, record)
            _record.republish(self._writer, self.fingerprint)
        except Exception as exc:  # recording must never stop the fit
            _warn(f"could not record the first step: {type(exc).__name__}: {exc}")

    def on_train_batch_end(self, batch: int, logs: Mapping[str, Any] | None = None) -> None:
        self._batches += 1
        every = self.log_every_n_batches
        if self._sink is not None and every and self._batches % every == 0:
            self._sink.log_metrics(_numbers(logs, "batch_"), step=self._batches)

    def on_epoch_end(self, epoch: int, logs: Mapping[str, Any] | None = None) -> None:
        if self._sink is not None:
            self._sink.log_metrics(_numbers(logs), step=epoch)

    # -- end ---------------------------------------------------------------------------------

    def on_train_end(self, logs: Mapping[str, Any] | None = None) -> None:
        """Wait (bounded) until MLflow holds what was recorded; end the run if it is ours; then
        the closing line a decorated run prints (``_record.announce_end``)."""
        try:
            if self._writer is not None and not self._writer.flush(self.flush_timeout_s):
                _warn("MLflow did not store the fit's records in time; they stay in the spool")
        finally:
            if self._owns_run:
                import mlflow

                self._owns_run = False
                mlflow.end_run()
        _record.announce_end(self._writer)
