"""Regenerate the README's pictures of the MLflow UI: the demo's runs as a user sees them in a real
``mlflow ui``, photographed by a real headless browser (Debian's chromium).

    make demo                              # leaves the three demo runs in ./mlflow.db
    python docs/make_ui_screenshots.py     # needs chromium on PATH (apt-get install chromium)

writes docs/ui-runs.png (the runs table with fingerprint columns), docs/ui-run.png (run B's page
with its fingerprint tags) and docs/ui-report.png (the A-vs-B report in the artifact viewer).
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the DevTools client the browser test uses

from support.browser import Page, experiment_url, open_page, run_url, show_columns  # noqa: E402
from support.mlflow_team import healthy  # noqa: E402
from support.procs import free_port, wait_for  # noqa: E402

STORE = ROOT / "mlflow.db"
EXPERIMENT = "fingerprint-demo"
COLUMNS = [
    "fingerprint.hash",
    "fingerprint.hash.env",
    "fingerprint.hash.recipe",
    "fingerprint.num_workers",
    "fingerprint.gpu",
]


def client() -> Any:
    from mlflow import MlflowClient

    return MlflowClient(f"sqlite:///{STORE}")


def demo_runs() -> tuple[str, dict[str, str]]:
    """The demo experiment's id and its runs' ids by name."""
    experiment = client().get_experiment_by_name(EXPERIMENT)
    if experiment is None:
        raise SystemExit(f"no experiment {EXPERIMENT!r} in {STORE}: run `make demo` first")
    runs = client().search_runs([experiment.experiment_id])
    return experiment.experiment_id, {r.info.run_name: r.info.run_id for r in runs}


def save(page: Page, name: str, height: int) -> None:
    """A screenshot cut to ``height`` pixels and reduced to a small palette (UI pictures have few
    colours), so the README's pictures stay small."""
    from PIL import Image

    raw = ROOT / "docs" / name
    page.screenshot(raw)
    image = Image.open(io.BytesIO(raw.read_bytes())).convert("RGB")
    image = image.crop((0, 0, image.width, min(height, image.height)))
    image.quantize(colors=64).save(raw, optimize=True)
    print(f"wrote docs/{name} ({raw.stat().st_size // 1024} KiB)")


def main() -> int:
    experiment_id, runs = demo_runs()
    a, b = runs["A"], runs["B"]
    report = f"fingerprint/diff/{a[:12]}_vs_{b[:12]}.html"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    ui = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", f"sqlite:///{STORE}",
         "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(lambda: healthy(url), 120, f"mlflow ui at {url}", alive=lambda: ui.poll() is None)
        env_hash = client().get_run(b).data.tags["fingerprint.hash.env"]
        with open_page(width=1700, height=1000) as page:
            search = f"tags.`fingerprint.hash.env` = '{env_hash}'"  # runs like B's environment
            show_columns(page, url, experiment_id, COLUMNS, search)
            page.goto(experiment_url(url, experiment_id))
            page.wait_for("3 matching runs", "fingerprint.hash.env", settle_s=2)
            save(page, "ui-runs.png", 370)
        with open_page(width=1400, height=1000) as page:
            page.goto(run_url(url, experiment_id, b))
            page.wait_for("fingerprint.hash", "fingerprint.gpu", settle_s=2)
            save(page, "ui-run.png", 1000)
            page.goto(run_url(url, experiment_id, b, f"artifacts/{report}"))
            page.wait_for("Verdict: explained", settle_s=3)
            save(page, "ui-report.png", 1000)
    finally:
        ui.terminate()
        ui.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
