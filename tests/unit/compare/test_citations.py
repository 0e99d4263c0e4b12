"""Where a claim can be checked (``compare/citations.py``): a source is a public https page, a row
of the shipped knowledge base, or both, and reads as the report prints it."""

from __future__ import annotations

import pytest

from mlflow_fingerprint import knowledge
from mlflow_fingerprint.compare import citations
from mlflow_fingerprint.compare.citations import Source


def test_a_source_reads_as_its_page_then_its_knowledge_base_row() -> None:
    assert str(Source(citations.RANDOMNESS)) == citations.RANDOMNESS
    both = Source(citations.CUDNN_DOC, "cuDNN benchmark")
    assert str(both) == f"{citations.CUDNN_DOC}; {knowledge.SHOWN_AS}: cuDNN benchmark"
    assert str(Source(kb="cuDNN benchmark")) == f"{knowledge.SHOWN_AS}: cuDNN benchmark"


@pytest.mark.parametrize(
    ("url", "kb", "message"),
    [
        ("https://docs.pytorch.org/a page", None, "well-formed https URL"),
        ("file:///etc/passwd", None, "well-formed https URL"),
        ("https://", None, "well-formed https URL"),
        (None, "  ", "knowledge-base row must not be empty"),
    ],
)
def test_a_source_that_cannot_be_opened_is_refused(url: str | None, kb: str | None, message: str):
    with pytest.raises(ValueError, match=message):
        Source(url, kb)


def test_every_page_constant_is_a_source_a_reader_can_open() -> None:
    pages = [
        v
        for k, v in vars(citations).items()
        if k.isupper() and isinstance(v, str) and v != knowledge.SHOWN_AS
    ]
    assert len(pages) > 20
    for page in pages:
        assert str(Source(page)) == page
