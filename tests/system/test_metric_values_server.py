"""The run writer against a real ``mlflow server``: bad values refused with one warning each, the
rest stored."""

from __future__ import annotations

import warnings
from pathlib import Path

from support.writer_values import check_stored, log_mixed, open_writer, ours


def test_writer_against_a_real_server(mlflow_server: str, spool_dir: Path) -> None:
    writer, run_id = open_writer(mlflow_server, spool_dir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log_mixed(writer.log_metrics)
        assert writer.close(60)
    check_stored(mlflow_server, run_id, ours(caught))
    assert not writer.spool.path.exists()
