"""Under ``--dist loadfile``, a folder under ``tests/system`` is one unit of scheduling.

Why: xdist sends a test module to one worker, so a module's fixtures are built once; a module
that grew long (``test_bisect.py``, 1051 lines) could not be split by what it proves without its
trainings running once per new module, on either worker. Its modules now sit in a folder of
their own (``tests/system/bisect/``) whose ``conftest.py`` builds what they share at session
scope; this plugin sends the whole folder to one worker, so that is built once, and the
folder's modules run there one after the other, as the one module did.
"""

from __future__ import annotations

from typing import Any

import pytest

SYSTEM = "tests/system/"


def scope_of(nodeid: str) -> str:
    """The unit of scheduling of a test: its module, or its folder under ``tests/system``."""
    path = nodeid.split("::", 1)[0]
    rest = path.removeprefix(SYSTEM)
    if rest != path and "/" in rest:
        return SYSTEM + rest.split("/", 1)[0]
    return path


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FolderScheduling(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return FolderScheduling(config, log)
