"""explain's search of a store in slices of start time (``tracking.experiment.search_pages``):
the same runs in the same order as plain paging. A system test: it writes 28 times to a real
sqlite store, past the unit tier's 5 s on a loaded machine."""

from __future__ import annotations

from mlflow_fingerprint.tracking import experiment as reads


def test_a_search_sliced_by_start_time_reads_the_runs_of_one_paged_in_order(
    sqlite_tracking_uri: str, monkeypatch
) -> None:
    """Pages of 4 (as pages of 1,000 on a server): the first page, then slices of start time
    read at once, give the same runs in the same order, ties at a slice's edge included; a
    filter still applies; one page all started in one millisecond reads page by page."""
    from mlflow import MlflowClient

    client = MlflowClient(sqlite_tracking_uri)
    experiment = client.create_experiment("sliced")
    starts = [1000, 1000, 1001, 1003, 1003, 1003, 1007, 1010, 1010, 1200, 1201, 5000, 9000, 9000]
    for i, start in enumerate(starts):
        created = client.create_run(experiment, start_time=start, tags={"odd": str(i % 2)})
        client.set_terminated(created.info.run_id)
    monkeypatch.setattr(reads, "SEARCH_PAGE", 4)
    monkeypatch.setattr(reads, "SLICE_RUNS", 3)
    asked: list[str] = []
    real = client.search_runs
    monkeypatch.setattr(
        client, "search_runs", lambda *a, **k: asked.append(k["filter_string"]) or real(*a, **k)
    )

    def search(where: str, parallel: bool = False) -> list[str]:
        pages = reads.search_pages(client, [experiment], where, parallel=parallel)
        return [run.run_id for page in pages for run in page]

    for where in ("", "tags.odd = '1'"):
        paged = search(where)
        asked.clear()
        sliced = search(where, parallel=True)
        assert sliced == paged
        assert len(paged) == (14 if not where else 7)
        assert any("start_time >=" in f for f in asked)
        assert all(where in f for f in asked)
    monkeypatch.setattr(reads, "SLICE_RUNS", 2)  # the first page: two runs started at 1000
    asked.clear()
    assert len(search("", parallel=True)) == 14
    assert not any("start_time" in f for f in asked)
