"""mlflow-fingerprint: record why a PyTorch run's numbers are what they are, and explain diffs."""

from .capture import RunInfo, capture
from .compare import Report, diff
from .fingerprint import Fingerprint, FingerprintError
from .run import dataloader_generator, fingerprinted, log_metrics, seed_everything, seed_worker
from .version import __version__

__all__ = [
    "Fingerprint",
    "FingerprintError",
    "Report",
    "RunInfo",
    "__version__",
    "capture",
    "dataloader_generator",
    "diff",
    "fingerprinted",
    "log_metrics",
    "seed_everything",
    "seed_worker",
]
