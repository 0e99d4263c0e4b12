"""``--log-to RUN`` (``cli/log_to.py``): the run is found before any work is done, by id or by
name in an experiment, and a name without an experiment or an id not in the store is refused."""

from __future__ import annotations

import pytest

from mlflow_fingerprint.cli.log_to import log_text, target_run_id
from mlflow_fingerprint.errors import ResolveError
from support.records import cpu_record, log_run


def test_a_run_is_found_by_id_and_by_name_in_its_experiment(sqlite_tracking_uri: str) -> None:
    run_id = log_run(sqlite_tracking_uri, "kept", "target", cpu_record(), {"loss": [1.0]})
    client, found = target_run_id(run_id, None, None)
    assert found == run_id
    assert target_run_id("target", None, "kept")[1] == run_id
    assert log_text(client, run_id, "words", "reports/x.txt") == "reports/x.txt"
    assert [a.path for a in client.list_artifacts(run_id, "reports")] == ["reports/x.txt"]


def test_a_name_without_an_experiment_and_an_unknown_id_are_refused(
    sqlite_tracking_uri: str,
) -> None:
    with pytest.raises(ResolveError, match="give its experiment with -e EXPERIMENT"):
        target_run_id("target", None, None)
    with pytest.raises(ResolveError, match="--log-to: no run with id 0123456789abcdef"):
        target_run_id("0123456789abcdef0123456789abcdef", None, None)
