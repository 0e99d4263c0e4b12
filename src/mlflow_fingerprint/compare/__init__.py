"""The comparator: why two runs differ, from their fingerprints and their metrics."""

from .diff import diff
from .errors import ResolveError
from .report import Report

__all__ = ["Report", "ResolveError", "diff"]
