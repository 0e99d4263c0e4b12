"""``taken``: a list's pages, each taken out of the list as it is given, so that the pages a
caller has done with are held by no one."""

from __future__ import annotations

import pytest

from mlflow_fingerprint.tracking.experiment import taken


@pytest.mark.parametrize(("size", "sizes"), [(3, [3, 3, 1]), (7, [7]), (10, [7]), (0, [1] * 7)])
def test_pages_come_in_order_and_leave_the_list(size: int, sizes: list[int]) -> None:
    items = list(range(7))
    pages = taken(items, size)
    seen = []
    for page in pages:
        seen.append(page)
        assert len(items) == 7 - sum(map(len, seen))  # what is left, nothing given twice
    assert [len(p) for p in seen] == sizes
    assert [x for p in seen for x in p] == list(range(7))
    assert items == []


def test_an_empty_list_has_no_page() -> None:
    assert list(taken([], 5)) == []
