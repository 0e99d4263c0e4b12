"""Regenerate docs/diff-report.png: the HTML diff report of the demo's runs, served by a real
``mlflow server`` and photographed by a real headless browser (Debian's chromium).

    make demo                        # leaves the three demo runs in ./mlflow.db
    python docs/make_screenshot.py   # needs /usr/bin/chromium (apt-get install chromium)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the process helpers the tests use

from support.mlflow_team import healthy  # noqa: E402
from support.procs import free_port, wait_for  # noqa: E402

STORE = ROOT / "mlflow.db"
OUT = ROOT / "docs" / "diff-report.png"
EXPERIMENT = "fingerprint-demo"


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
        wait_for(
            lambda: healthy(url), 90, f"mlflow server at {url}", alive=lambda: server.poll() is None
        )
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
