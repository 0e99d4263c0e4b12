"""A small authenticating gateway in front of a real ``mlflow server``, as teams deploy one: it
answers 401 to a request without the right credentials (HTTP basic or a bearer token) and
forwards the others, byte for byte, to the server. ``deny`` makes it answer 401 to every API
request for a while (a token rotated, the gateway restarting). ``hold_s`` makes it hold each API
request that long before forwarding it (a server up but busy). ``/health`` is open and answered at
once, as it is on MLflow's own auth app.

Standard library only: ``http.server`` in front, ``urllib`` to the server.
"""

from __future__ import annotations

import base64
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .procs import free_port

_HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length", "authorization"}


@dataclass
class AuthProxy:
    """The gateway; ``url(user, password)`` is what a client is given."""

    upstream: str
    username: str
    password: str
    token: str | None = None
    port: int = field(default_factory=free_port)
    deny: bool = False
    hold_s: float = 0.0
    refused: int = 0  # 401s answered so far
    _server: ThreadingHTTPServer | None = None

    def url(self, with_credentials: bool = True) -> str:
        auth = f"{self.username}:{self.password}@" if with_credentials else ""
        return f"http://{auth}127.0.0.1:{self.port}"

    def allowed(self, header: str | None) -> bool:
        if self.deny or not header:
            return False
        basic = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        return header == f"Basic {basic}" or (
            self.token is not None and header == f"Bearer {self.token}"
        )

    def start(self) -> AuthProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.path != "/health" and not proxy.allowed(self.headers.get("Authorization")):
                    proxy.refused += 1
                    self._answer(401, b"You are not authenticated.", {"WWW-Authenticate": "Basic"})
                    return
                if self.path != "/health":
                    time.sleep(proxy.hold_s)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                request = urllib.request.Request(
                    proxy.upstream.rstrip("/") + self.path, body, headers, method=self.command
                )
                try:
                    with urllib.request.urlopen(request, timeout=60) as answer:
                        self._answer(answer.status, answer.read(), dict(answer.headers.items()))
                except urllib.error.HTTPError as exc:
                    self._answer(exc.code, exc.read(), dict(exc.headers.items()))

            def _answer(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    if key.lower() not in _HOP:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
