"""The interpreter section (``capture/python_info.py``): this interpreter, as ``platform`` and
``sys`` describe it."""

from __future__ import annotations

import platform
import struct
import sys
import sysconfig

from mlflow_fingerprint.capture import python_info
from mlflow_fingerprint.capture.core import make_context


def test_this_interpreter_is_described() -> None:
    section = python_info.probe(make_context())
    assert set(section) == {
        "implementation", "version", "compiler", "build", "bits", "gil_enabled", "executable",
        "prefix",
    }  # fmt: skip
    assert section["implementation"] == sys.implementation.name.replace("cpython", "CPython")
    assert section["version"] == "{}.{}.{}".format(*sys.version_info[:3])
    assert section["bits"] == struct.calcsize("P") * 8
    assert section["build"].startswith(platform.python_build()[0])
    assert section["compiler"] == platform.python_compiler()
    assert section["gil_enabled"] is not bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    assert (section["executable"], section["prefix"]) == (sys.executable, sys.prefix)
