"""The explain report as markdown (``present/explain/markdown.py``): a table of the fields, names
as code, and record text escaped."""

from __future__ import annotations

import dataclasses

from mlflow_fingerprint.present.explain.markdown import render
from support.explanation import sample


def test_the_fields_are_a_table_and_names_are_code() -> None:
    text = render(sample())
    assert text.startswith("### fingerprint explain sweep: val\\_loss (final value)")
    assert "| factor | share | 95% interval | verdict | mean per value |" in text
    assert "| `program.call.lr` | 80% | 70%–90% | **important** |" in text
    assert "**Ruled out** (within the noise): `torch.threads.intra_op`" in text


def test_a_metric_name_from_a_run_cannot_add_markup() -> None:
    text = render(dataclasses.replace(sample(), metric="<img src=x>|*loss*"))
    assert "<img" not in text
    assert "|*loss*" not in text
