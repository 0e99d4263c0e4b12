"""The first-use lock of a sqlite store beside a project (``tracking.local_store``): gone once
the store is ready. A system test: it creates a store through MLflow's migrations, about 3 s,
past the unit tier's 5 s on a loaded machine."""

from __future__ import annotations

from pathlib import Path

from mlflow_fingerprint import layout
from mlflow_fingerprint.tracking import local_store


def test_a_store_made_ready_leaves_no_lock_file_beside_it(
    tmp_path: Path, mlflow_db_template: Path
) -> None:
    """Created here, or found created: either way no ``mlflow.db.mfp-lock`` is left in the
    folder (in a project, one more untracked file in every later run's ``git status``)."""
    import shutil

    from mlflow import MlflowClient

    new, existing = tmp_path / "new" / "mlflow.db", tmp_path / "existing" / "mlflow.db"
    existing.parent.mkdir()
    shutil.copyfile(mlflow_db_template, existing)
    # as an earlier version of the package left it
    existing.with_name("mlflow.db" + layout.LOCK_SUFFIX).touch()
    for database in (new, existing):
        uri = local_store.ready(f"sqlite:///{database}")
        assert local_store.created(database)
        assert sorted(p.name for p in database.parent.iterdir()) == ["mlflow.db"]
        assert MlflowClient(uri).search_experiments()  # the store is there and answers
