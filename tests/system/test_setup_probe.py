"""The probe ``make`` runs before installing torch (scripts/torch_index.py): PyTorch's CPU index is
taken only when it answers, and an index that never does costs at most the probe's bound."""

from __future__ import annotations

import http.server
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

from support.paths import ROOT
from support.scripts import load_module

torch_index = load_module(ROOT / "scripts" / "torch_index.py", "torch_index")


def test_an_index_that_never_answers_is_given_up_within_the_bound() -> None:
    """A server that accepts the connection and says nothing (a firewall that drops replies looks
    the same to the client): the probe says no once its bound is spent, not pip's 180 s."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        start = time.monotonic()
        assert not torch_index.reachable(f"http://127.0.0.1:{port}/torch/", timeout=1.0)
        assert time.monotonic() - start < 2.0
    assert torch_index.PROBE_TIMEOUT_S <= 5  # the decision stays under the 10 s


def test_an_index_that_answers_is_taken() -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert torch_index.reachable(f"http://127.0.0.1:{server.server_port}/", timeout=5.0)
    finally:
        server.shutdown()
        server.server_close()


def test_make_refuses_a_python_older_than_the_tested_one_in_one_line(tmp_path: Path) -> None:
    """The pinned numpy and pandas need Python 3.11: make says so before it builds anything,
    rather than pip failing halfway with a resolver's page."""
    old = tmp_path / "python3.10"  # answers -V as a 3.10 does, and the version check as one
    old.write_text(
        '#!/bin/sh\nif [ "$1" = "-V" ]; then echo "Python 3.10.14"; exit 0; fi\nexit 1\n'
    )
    old.chmod(0o755)
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    out = subprocess.run(
        ["make", f"PYTHON={old}", ".venv/.created"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    (line,) = [x for x in out.stdout.splitlines() if "Python 3.11" in x]
    assert line.startswith("mlflow-fingerprint needs Python 3.11 or newer;"), out.stdout
    assert "Python 3.10.14" in line
    assert not (tmp_path / ".venv" / "bin").exists()  # no venv was made
