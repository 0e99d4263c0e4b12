"""Blocks of fields built from columns of values, as ``explain`` builds them from a table: the
shared start of the unit tests of ``explain/anova.py`` and ``explain/design.py``."""

from __future__ import annotations

from mlflow_fingerprint.explain.design import Block, Column, blocks, encode


def texts_of(**columns: object) -> dict[str, tuple[str, ...]]:
    return {name: tuple(str(v) for v in values) for name, values in columns.items()}


def columns_of(texts: dict[str, tuple[str, ...]]) -> dict[str, Column]:
    """Each field's texts as the table's column of level codes."""
    return {name: Column(name, *encode(values)) for name, values in texts.items()}


def texts_in(col: Column) -> tuple[str, ...]:
    """A column's value in each run, as text."""
    return tuple(col.labels[k] for k in col.codes)


def design_blocks(texts: dict[str, tuple[str, ...]]) -> list[Block]:
    return blocks(list(columns_of(texts).values()))
