"""The code that ran: git commit, uncommitted changes; what else of the repository was recorded."""

from __future__ import annotations

from ...model.fields import GIT_CHANGED_COUNT, GIT_COMMIT, GIT_DIFF_DIGEST, GIT_DIRTY
from .. import citations as cite
from .base import Rule, declared_rule

RULES: tuple[Rule, ...] = (
    declared_rule(
        GIT_DIRTY,
        "One run had uncommitted code changes, so the two did not run the same code.",
        cite.CODE,
        prior=3,
        priority=50,
    ),
    declared_rule(
        GIT_COMMIT,
        "The runs used different commits of the code.",
        cite.CODE,
        prior=3,
        priority=60,
    ),
    Rule(
        GIT_DIFF_DIGEST,
        "recipe",
        "The uncommitted changes differ, so the code that ran differs.",
        cite.CODE,
        prior=2,
        priority=70,
    ),
    Rule(
        GIT_CHANGED_COUNT,
        "recipe",
        "A different number of files had uncommitted changes.",
        cite.CODE,
        prior=1,
        priority=80,
    ),
    Rule(
        "git",
        "none",
        "Where the repository lives or which branch name pointed at the commit.",
        cite.NOT_ARITHMETIC,
        priority=1220,
    ),
)
