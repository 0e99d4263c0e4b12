"""Recording training runs in MLflow: the ``fingerprinted`` wrapper, fast metric logging, seeding
helpers, the spool that survives tracking-server outages, and the run context provider.

Importing this package does not import mlflow: ``fingerprint --help`` must stay fast.
"""

from .current import log_metrics
from .seeding import dataloader_generator, seed_everything, seed_worker
from .wrapper import fingerprinted

__all__ = [
    "dataloader_generator",
    "fingerprinted",
    "log_metrics",
    "seed_everything",
    "seed_worker",
]
