"""``FingerprintCallback``: the fingerprint of a PyTorch Lightning fit, in its MLFlowLogger run.

Lightning's ``MLFlowLogger`` creates the run (through ``resolve_tags``, so the run context provider
has tagged it already); the callback adds what only the trainer knows: the seed
``seed_everything`` left in ``PL_GLOBAL_SEED``, ``Trainer(deterministic=...)`` and the train
DataLoader's batch size and workers. It captures at ``on_train_start``, the first hook where the
train DataLoader exists, after Lightning has set its determinism flags, and adds what the first
batch started from (the initial weights and the batch: ``first_step``) at the first batch.

    trainer = L.Trainer(logger=MLFlowLogger(...), callbacks=[FingerprintCallback()])

Without an MLFlowLogger it logs into the active MLflow run, if any. Importing this module imports
Lightning (``lightning.pytorch``, else ``pytorch_lightning``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from typing import Any

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the older distribution name
    from pytorch_lightning.callbacks import Callback  # type: ignore[no-redef]

from .. import layout
from ..capture.first_step import optimizer_groups, weights_record
from ..errors import FingerprintWarning
from ..model.fingerprint import Fingerprint
from ..run.first_step import FirstStepRecorder
from . import _record

SEEDED_BY = "lightning.seed_everything"


def _mlflow_logger(trainer: Any) -> Any:
    for logger in getattr(trainer, "loggers", None) or []:
        if type(logger).__name__ == "MLFlowLogger":
            return logger
    return None


def _seed() -> int | None:
    value = os.environ.get("PL_GLOBAL_SEED")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class FingerprintCallback(Callback):
    """Record the fingerprint of each fit in the trainer's MLflow run. In a DDP fit every rank
    captures and rank 0 (where Lightning's loggers log) records all of them into that one run."""

    def __init__(self, flush_timeout_s: float = 30.0, watch: bool | Iterable[int] = False) -> None:
        """``watch``: True (the default steps) or the steps at which ``mfp.watch`` records the
        LightningModule's tensors (steps count the optimizer's ``step()`` calls, from 0: the
        trainer's ``global_step`` before each update)."""
        self.flush_timeout_s = flush_timeout_s
        self.fingerprint: Fingerprint | None = None
        self.run_id: str | None = None
        self._writer: Any = None
        self._watch_request = watch if isinstance(watch, bool) else tuple(watch)
        self.watch: Any = None
        self._first_step_done = False

    def _target(self, trainer: Any) -> tuple[str, str, str | None] | None:
        """(run id, tracking URI, the provider's spool id tag) of the run to log into."""
        logger = _mlflow_logger(trainer)
        if logger is not None:
            run_id = logger.run_id
            uri = getattr(logger, "_tracking_uri", None) or _mlflow_uri()
            tags = logger.experiment.get_run(run_id).data.tags
            return run_id, uri, tags.get(layout.INTERNAL_SPOOL_ID)
        import mlflow

        active = mlflow.active_run()
        if active is None:
            return None
        return (
            active.info.run_id,
            mlflow.get_tracking_uri(),
            active.data.tags.get(layout.INTERNAL_SPOOL_ID),
        )

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        """Every rank captures and joins the gather (a collective); rank 0 records the job."""
        try:
            self.fingerprint = self._capture(trainer)
            job = _record.job_fingerprint(self.fingerprint)
            # None: a non-zero rank, its fingerprint went to rank 0. Lightning's own test covers
            # the processes of a job torch.distributed does not know (XLA): only rank 0 logs.
            if job is None or getattr(trainer, "global_rank", 0) != 0:
                return
            fp, records = job
            self.fingerprint = fp  # rank 0 keeps the merged one
            target = self._target(trainer)
            if target is None:
                warnings.warn(
                    "mlflow-fingerprint: FingerprintCallback found no MLFlowLogger and no active "
                    "MLflow run; nothing recorded",
                    FingerprintWarning,
                    stacklevel=2,
                )
                return
            run_id, uri, spool_id = target
            _record.take_over_from_provider(spool_id)
            self._writer = _record.record_into_run(
                run_id, uri, fp, {layout.TAG_INTEGRATION: "lightning"}, records
            )
            self.run_id = run_id
            self.watch = _record.watch(self._writer, pl_module, self._watch_request)
        except Exception as exc:  # recording must never stop the fit
            warnings.warn(
                f"mlflow-fingerprint: could not record the fingerprint: {exc}",
                FingerprintWarning,
                stacklevel=2,
            )

    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        """At the fit's first batch: the optimizers' parameters (the initial weights) and the
        batch, into the run's fingerprint (``first_step``); nothing from the second batch on."""
        if self._first_step_done:
            return
        self._first_step_done = True
        if self.fingerprint is None or self._writer is None:
            return
        try:
            import torch

            optimizers = list(getattr(trainer, "optimizers", None) or ())
            groups = [p for o in optimizers for p in optimizer_groups(o)] or [
                list(pl_module.parameters())
            ]
            record = FirstStepRecorder().taken(
                "lightning", lambda: weights_record(groups, torch), batch
            )
            self.fingerprint = _record.with_first_step(self.fingerprint, record)
            _record.republish(self._writer, self.fingerprint)
        except Exception as exc:  # recording must never stop the fit
            warnings.warn(
                f"mlflow-fingerprint: could not record the first step: {exc}",
                FingerprintWarning,
                stacklevel=2,
            )

    def _capture(self, trainer: Any) -> Fingerprint:
        """This rank's fingerprint, with what the trainer knows (seed, determinism, loader)."""
        loader = getattr(trainer, "train_dataloader", None)
        connector = getattr(trainer, "_accelerator_connector", None)
        return _record.capture_for_trainer(
            seed=_seed(),
            seeded_by=SEEDED_BY,
            declared={
                "batch_size": getattr(loader, "batch_size", None),
                "num_workers": getattr(loader, "num_workers", None),
                "world_size": getattr(trainer, "world_size", None),
            },
            deterministic=getattr(connector, "deterministic", None),
            loaders=_record.loader_records(loader),
        )

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        """Wait (bounded) until MLflow holds the fingerprint: the fit is over, the run too; then,
        at the end of the fit only (a later ``validate`` or ``test`` tears down again), the
        closing line a decorated run prints (``_record.announce_end``)."""
        if self.watch is not None:
            self.watch.close()
        if self._writer is not None:
            self._writer.flush(self.flush_timeout_s)
            if stage == "fit":
                _record.announce_end(self._writer)


def _mlflow_uri() -> str:
    import mlflow

    return mlflow.get_tracking_uri()
