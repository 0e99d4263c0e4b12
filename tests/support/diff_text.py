"""Reading what ``fingerprint diff`` prints as text, for the scenario tests."""

from __future__ import annotations

import re

# The brief report (``fingerprint diff`` without --all): ``1  field: a -> b  (effect)``, then
# ``   ↳ field: a -> b`` per consequence, fields of one parent folded as
# ``   ↳ parent: leaf a -> b, leaf c -> d``.
RANKED = re.compile(r"^\d+\s{2,}([^\s:]+):", re.M)  # one numbered row per change
TOP_GROUP = re.compile(r"^1\s{2,}([^\s:]+):[^\n]*\n((?:\s+(?:↳ |\s)[^\n]*\n)*)", re.M)
CONSEQUENCE = re.compile(r"↳ ([^\s:]+): ([^\n]*)")
VERDICT = re.compile(r"^verdict: (\w+)", re.M)


def consequences(block: str) -> list[str]:
    """The fields named under a change, a folded line's leaves as whole field names."""
    fields = []
    for parent, rest in CONSEQUENCE.findall(block):
        fields.append(parent)
        fields += [f"{parent}.{part.split(' ')[0]}" for part in rest.split(", ")]
    return fields


def assert_setting_ranked_first(text: str, field: str) -> None:
    """``field`` is the most likely cause, or beneath the command-line option ranked first that
    set it (one change is one difference: the user reads what they typed, then what it did)."""
    found = TOP_GROUP.search(text)
    assert found is not None, text
    top, beneath = found.group(1), consequences(found.group(2))
    assert top == field or (top.startswith("program.options.") and field in beneath), text


def verdict(text: str) -> str:
    found = VERDICT.search(text)
    assert found is not None, text
    return found.group(1)
