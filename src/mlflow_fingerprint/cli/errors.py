"""The one exception type the CLI turns into a single line on stderr and exit status 2."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input or an unreachable store: the message is the whole story for the user."""
