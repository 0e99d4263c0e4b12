"""The bisect project and its bisects and reruns, built once for every module of this folder.

Why a folder with session fixtures, not one module with module fixtures: the recorded runs and
the jobs cost minutes of trainings, and the modules here split the tests by what they prove.
Under ``--dist loadfile`` the folder is one unit of scheduling (``support/scopes.py``), so one
worker builds this once and runs every module here; run alone, a module builds it for itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bisect_runs import Project, build_project, run_jobs


@pytest.fixture(scope="session")
def project(tmp_path_factory: pytest.TempPathFactory, mlflow_db_template: Path) -> Project:
    return build_project(tmp_path_factory, mlflow_db_template)


@pytest.fixture(scope="session")
def jobs(project: Project) -> dict[str, Any]:
    return run_jobs(project)
