"""Recording training runs in MLflow: the ``fingerprinted`` wrapper, fast metric logging, seeding
helpers, the spool that survives tracking-server outages, and the run context provider.

The public names are imported on first use (PEP 562): ``import mlflow`` imports the run context
provider (``run.context_provider``, through its entry point) and with it this package, and must
not pay for the wrapper, the capture probes and the uploader a plain ``mlflow.start_run`` may
never use. Importing this package does not import mlflow either: ``fingerprint --help`` must stay
fast.
"""

from __future__ import annotations

from ..lazy import lazy_names

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; type checkers know the name
if TYPE_CHECKING:
    from .current import log_metrics
    from .seeding import dataloader_generator, seed_everything, seed_worker
    from .wrapper import fingerprinted

# public name -> the submodule that defines it
_SOURCES = {
    "dataloader_generator": ".seeding",
    "fingerprinted": ".wrapper",
    "log_metrics": ".current",
    "seed_everything": ".seeding",
    "seed_worker": ".seeding",
}

__all__ = [
    "dataloader_generator",
    "fingerprinted",
    "log_metrics",
    "seed_everything",
    "seed_worker",
]


__getattr__ = lazy_names(__name__, _SOURCES)
