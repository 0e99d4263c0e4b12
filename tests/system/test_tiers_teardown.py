"""The tiers' check (tests/support/tiers.py) in a pytest session of its own whose unit tests start
processes: a system test, since the outer session's unit tier would see those processes too."""

from __future__ import annotations

import pytest


def test_the_sessions_teardown_after_the_last_unit_test_is_not_the_tests(
    pytester: pytest.Pytester,
) -> None:
    """A session fixture ends in the teardown of the session's last test (with pytest-xdist often
    a unit test): the process it starts then (a team server's ``pg_ctl stop``) and the time it
    takes are the session's. The unit test before the last one is still watched."""
    conftest = (
        'import subprocess, sys\nimport pytest\n\npytest_plugins = ["support.tiers"]\n\n'
        '@pytest.fixture(scope="session")\ndef service():\n    yield\n'
        '    subprocess.run([sys.executable, "-c", "pass"], check=True)\n'
    )
    (pytester.path / "tests" / "system").mkdir(parents=True)
    (pytester.path / "tests" / "unit").mkdir(parents=True)
    (pytester.path / "tests" / "conftest.py").write_text(conftest)
    (pytester.path / "tests" / "system" / "test_a.py").write_text(
        "def test_uses_the_service(service):\n    pass\n"
    )
    (pytester.path / "tests" / "unit" / "test_b.py").write_text(
        "import subprocess, sys\n\n"
        "def test_starts_python():\n"
        "    subprocess.run([sys.executable, '-c', 'pass'], check=True)\n\n"
        "def test_last():\n    pass\n"
    )
    result = pytester.runpytest_inprocess("tests", "-p", "no:cacheprovider", "--unit-load", "1")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*test_starts_python is in tests/unit but it started a process*"])
