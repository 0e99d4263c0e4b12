"""Regenerate docs/diff-report.png: the HTML diff report of the demo's runs, served by a real
``mlflow server`` and photographed by a real headless browser (Debian's chromium).

    make demo                        # leaves the three demo runs in ./mlflow.db
    python docs/make_screenshot.py   # needs /usr/bin/chromium (apt-get install chromium)
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "mlflow.db"
OUT = ROOT / "docs" / "diff-report.png"
EXPERIMENT = "fingerprint-demo"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"mlflow server at {url} did not become healthy")


def main() -> int:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None or not STORE.is_file():
        raise SystemExit("needs chromium on PATH and the demo's ./mlflow.db (run `make demo`)")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            f"sqlite:///{STORE}",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_healthy(url)
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "report.html"
            cli = [
                sys.executable,
                "-m",
                "mlflow_fingerprint.cli",
                "diff",
                "A",
                "B",
                "-e",
                EXPERIMENT,
                "--tracking-uri",
                url,
                "--format",
                "html",
                "--output",
                str(report),
            ]
            code = subprocess.run(cli, check=False).returncode
            if code not in (0, 1):
                raise SystemExit(f"fingerprint diff failed with exit {code}")
            subprocess.run(
                [
                    browser,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    f"--user-data-dir={tmp}/ud",
                    "--hide-scrollbars",
                    "--window-size=1280,1400",
                    f"--screenshot={OUT}",
                    report.as_uri(),
                ],
                check=True,
                capture_output=True,
                timeout=120,
            )
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
