"""The probe ``make`` runs before installing torch (scripts/torch_index.py): PyTorch's CPU index is
taken only when it answers, and an index that never does costs at most the probe's bound."""

from __future__ import annotations

import http.server
import socket
import threading
import time

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
