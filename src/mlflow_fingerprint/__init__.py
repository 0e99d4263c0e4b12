"""mlflow-fingerprint: record why a PyTorch run's numbers are what they are, and explain diffs."""

from .capture import RunInfo, capture
from .fingerprint import Fingerprint, FingerprintError
from .version import __version__

__all__ = ["Fingerprint", "FingerprintError", "RunInfo", "__version__", "capture"]
