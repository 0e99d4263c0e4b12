"""Probes that read one process's environment; ``capture()`` runs them all."""

from .context import ProbeContext, RunInfo
from .core import capture

__all__ = ["ProbeContext", "RunInfo", "capture"]
