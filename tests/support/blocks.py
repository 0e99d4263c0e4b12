"""Blocks of fields built from columns of values, as ``explain`` builds them from a table: the
shared start of the unit tests of ``explain/anova.py`` and ``explain/design.py``."""

from __future__ import annotations

from mlflow_fingerprint.explain.design import Block, blocks, column


def texts_of(**columns: object) -> dict[str, tuple[str, ...]]:
    return {name: tuple(str(v) for v in values) for name, values in columns.items()}


def design_blocks(texts: dict[str, tuple[str, ...]]) -> list[Block]:
    return blocks([column(name, values) for name, values in texts.items()], texts)
