"""Reading what ``fingerprint diff`` prints as text, for the scenario tests."""

from __future__ import annotations

import re

RANKED = re.compile(r"^\d+\s{2,}(\S+)", re.M)  # the numbered rows of the differences table
TOP_GROUP = re.compile(r"^1\s{2,}(\S+)[^\n]*\n((?:\s+↳ \S+[^\n]*\n)*)", re.M)
CONSEQUENCE = re.compile(r"↳ (\S+)")
VERDICT = re.compile(r"^verdict: (\w+)", re.M)


def assert_setting_ranked_first(text: str, field: str) -> None:
    """``field`` is the most likely cause, or beneath the command-line option ranked first that
    set it (one change is one difference: the user reads what they typed, then what it did)."""
    found = TOP_GROUP.search(text)
    assert found is not None, text
    top, beneath = found.group(1), CONSEQUENCE.findall(found.group(2))
    assert top == field or (top.startswith("program.options.") and field in beneath), text


def verdict(text: str) -> str:
    found = VERDICT.search(text)
    assert found is not None, text
    return found.group(1)
