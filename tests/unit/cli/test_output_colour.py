"""Colour only on a terminal, and never where ``NO_COLOR`` is set (https://no-color.org)."""

from __future__ import annotations

import os
import pty
import sys

import pytest

from mlflow_fingerprint.cli.output import coloured


def test_a_terminal_gets_colour_unless_no_color_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    leader, follower = pty.openpty()
    try:
        with os.fdopen(follower, "w", closefd=False) as terminal:
            monkeypatch.setattr(sys, "stdout", terminal)
            monkeypatch.delenv("NO_COLOR", raising=False)
            assert coloured(None)
            assert not coloured("report.txt")  # a file: plain
            monkeypatch.setenv("NO_COLOR", "1")
            assert not coloured(None)
    finally:
        os.close(leader)
        os.close(follower)
