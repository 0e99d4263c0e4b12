"""``FingerprintTrainerCallback``: the fingerprint of a Hugging Face ``Trainer`` run.

HF's ``MLflowCallback`` opens the run with ``mlflow.start_run`` in its ``on_train_begin`` (so the
run context provider has tagged it) and logs ``TrainingArguments`` as params. This callback runs
after it (user callbacks follow the reporting ones) and adds the fingerprint, with what only the
arguments say: ``seed``, ``full_determinism``, ``tf32``, the per-device batch size, the
DataLoader workers and the world size.

    args = TrainingArguments(..., report_to=["mlflow"])
    Trainer(model, args, callbacks=[FingerprintTrainerCallback()])

It logs into the active MLflow run; with none (``report_to`` without mlflow) it warns once and
records nothing. What the first step started from (``first_step``: the optimizer's parameters as
its first ``step()`` finds them) is taken by torch's global optimizer step pre-hook, as in a
decorated run, and published after that step; the Trainer hands callbacks no batch, so the
first batch is recorded as unavailable. Importing this module imports ``transformers``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from transformers import TrainerCallback

from .. import layout
from ..errors import FingerprintWarning
from ..model.fingerprint import Fingerprint
from ..run.first_step import FirstStepRecorder
from . import _record

SEEDED_BY = "transformers.Trainer"


def declared_from_args(args: Any) -> dict[str, Any]:
    """The recipe facts of ``TrainingArguments`` the fingerprint keeps in ``data.declared``."""
    return {
        "batch_size": getattr(args, "per_device_train_batch_size", None),
        "num_workers": getattr(args, "dataloader_num_workers", None),
        "world_size": getattr(args, "world_size", None),
        "gradient_accumulation_steps": getattr(args, "gradient_accumulation_steps", None),
        "full_determinism": getattr(args, "full_determinism", None),
        "tf32": getattr(args, "tf32", None),
        "data_seed": getattr(args, "data_seed", None),
    }


class FingerprintTrainerCallback(TrainerCallback):
    """Record the Trainer's fingerprint into the MLflow run its MLflowCallback opened. In a
    distributed run every rank captures and the world process zero (the only one HF's
    MLflowCallback logs from) records all of them into that one run."""

    def __init__(self, flush_timeout_s: float = 30.0, watch: bool | Iterable[int] = False) -> None:
        """``watch``: True (the default steps) or the steps at which ``mfp.watch`` records the
        model's tensors (steps count optimizer updates from 0: ``state.global_step`` before
        each update)."""
        self.flush_timeout_s = flush_timeout_s
        self.fingerprint: Fingerprint | None = None
        self.run_id: str | None = None
        self._writer: Any = None
        self._watch_request = watch if isinstance(watch, bool) else tuple(watch)
        self.watch: Any = None
        self._first: FirstStepRecorder | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Every rank captures and joins the gather (a collective); rank 0 records the job."""
        try:
            self.fingerprint = _record.capture_for_trainer(
                seed=getattr(args, "seed", None),
                seeded_by=SEEDED_BY,
                declared=declared_from_args(args),
                deterministic=bool(getattr(args, "full_determinism", False)),
                loaders=_record.loader_records(kwargs.get("train_dataloader")),
            )
            job = _record.job_fingerprint(self.fingerprint)
            # None: a non-zero rank, its fingerprint went to rank 0. HF's own test covers the
            # processes of a job torch.distributed does not know (XLA): only process zero logs.
            if job is None or not getattr(state, "is_world_process_zero", True):
                return
            fp, records = job
            self.fingerprint = fp  # rank 0 keeps the merged one
            self._record(fp, records)
            model = kwargs.get("model")
            if self._writer is not None and model is not None:
                self.watch = _record.watch(self._writer, model, self._watch_request)
            if self._writer is not None:
                self._first = FirstStepRecorder().start()
        except Exception as exc:  # recording must never stop training
            warnings.warn(
                f"mlflow-fingerprint: could not record the fingerprint: {exc}",
                FingerprintWarning,
                stacklevel=2,
            )

    def _record(self, fp: Fingerprint, records: list[dict[str, Any]]) -> None:
        """Log the job's fingerprint into the run HF's MLflowCallback opened on this process."""
        import mlflow

        active = mlflow.active_run()
        if active is None:
            warnings.warn(
                "mlflow-fingerprint: no active MLflow run (is 'mlflow' in report_to?); "
                "FingerprintTrainerCallback recorded nothing",
                FingerprintWarning,
                stacklevel=3,
            )
            return
        run_id = active.info.run_id
        _record.take_over_from_provider(active.data.tags.get(layout.INTERNAL_SPOOL_ID))
        self._writer = _record.record_into_run(
            run_id,
            mlflow.get_tracking_uri(),
            fp,
            {layout.TAG_INTEGRATION: "transformers"},
            records,
        )
        self.run_id = run_id

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """After the first optimizer step: what it started from, into the run's fingerprint;
        nothing from the second step on (the recorder is let go after the first)."""
        first, self._first = self._first, None
        if first is None:
            return
        first.stop()
        try:
            record = first.record()
            if record is not None and self.fingerprint is not None:
                self.fingerprint = _record.with_first_step(self.fingerprint, record)
                _record.republish(self._writer, self.fingerprint)
        except Exception as exc:  # recording must never stop training
            warnings.warn(
                f"mlflow-fingerprint: could not record the first step: {exc}",
                FingerprintWarning,
                stacklevel=2,
            )

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._first is not None:  # a fit that took no step
            self._first.stop()
            self._first = None
        if self.watch is not None:
            self.watch.close()
        if self._writer is not None:
            self._writer.flush(self.flush_timeout_s)
            _record.announce_end(self._writer)
