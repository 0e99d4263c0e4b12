"""The comparator: why two runs differ, from their fingerprints and their metrics."""

from ..errors import ResolveError
from .diff import diff
from .report import Report

__all__ = ["Report", "ResolveError", "diff"]
