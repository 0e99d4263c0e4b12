"""The comparator's one error: a reference that does not lead to a fingerprint.

It is a FingerprintError, so the CLI prints its message as one line and exits 2, and a Python
caller catches bad input from ``capture``, ``Fingerprint.load`` and ``diff`` alike.
"""

from __future__ import annotations

from ..fingerprint import FingerprintError


class ResolveError(FingerprintError):
    """An unknown run, a run without a fingerprint, an unreadable file or an unreachable store."""
