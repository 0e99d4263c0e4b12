"""Reading what ``fingerprint diff`` prints as text, for the scenario tests."""

from __future__ import annotations

import re

RANKED = re.compile(r"^\d+\s{2,}(\S+)", re.M)  # the rows of the differences table
VERDICT = re.compile(r"^verdict: (\w+)", re.M)


def assert_setting_ranked_first(text: str, field: str) -> None:
    """``field`` is the most likely cause, or second behind the command-line option that set it:
    an option is a recipe difference, which ranks before the numerics flag it switched, and the
    user then reads what they typed, then what it did."""
    ranked = RANKED.findall(text)
    assert field in ranked[:2], text
    assert ranked[0] == field or ranked[0].startswith("program.options."), text


def verdict(text: str) -> str:
    found = VERDICT.search(text)
    assert found is not None, text
    return found.group(1)
