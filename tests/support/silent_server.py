"""A tracking server that is up but never answers: ``/health`` says OK (a load balancer's check
passes), every API request is accepted and then left waiting. The fault behind "sync never ends"
and "show takes a minute to say it could not connect"."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .procs import free_port


@dataclass
class SilentServer:
    port: int = field(default_factory=free_port)
    hold_s: float = 120.0  # how long an API request is left waiting before the socket closes
    _server: ThreadingHTTPServer | None = None
    _release: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> SilentServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                if self.path == "/health":
                    self.send_response(200)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"OK")
                    return
                owner._release.wait(owner.hold_s)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
