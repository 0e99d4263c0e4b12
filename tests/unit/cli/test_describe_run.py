"""``describe_run`` (``cli/describe_run.py``): a run's MLflow description says how it differs
from the run before it, a person's own description is kept, and arguments that are not run ids
are refused before anything is read."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from mlflow_fingerprint import layout
from mlflow_fingerprint.cli.describe_run import describe, main
from support.records import cpu_record, log_run, seeded


def test_the_description_says_what_differs_and_a_person_s_is_kept(
    sqlite_tracking_uri: str,
) -> None:
    a = log_run(sqlite_tracking_uri, "runs", "a", seeded(cpu_record(), 0), {"loss": [1.0, 0.5]})
    b = log_run(sqlite_tracking_uri, "runs", "b", seeded(cpu_record(), 1), {"loss": [1.0, 0.7]})
    describe(b, a)
    client = MlflowClient()
    line = client.get_run(b).data.tags[layout.MLFLOW_DESCRIPTION]
    assert "seed" in line
    client.set_tag(a, layout.MLFLOW_DESCRIPTION, "my words")
    describe(a, b)
    assert client.get_run(a).data.tags[layout.MLFLOW_DESCRIPTION] == "my words"


@pytest.mark.parametrize("argv", [[], ["x" * 32], ["a" * 32, "b" * 32, "c" * 32], ["-h"]])
def test_arguments_that_are_not_run_ids_are_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == "usage: describe_run RUN_ID [PREVIOUS_RUN_ID]\n"
