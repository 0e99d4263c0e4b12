"""Turn what ``record.py`` brought back from a GPU machine into the repository's GPU fixtures.

    python tests/jobs/gpu_truth/make_fixture.py RUNS_DIR CHECK_DIR --machine h100

``RUNS_DIR`` is the unpacked ``gpu_truth.tar.gz`` of a full recording (its ``export/``: runs,
bisect, timing); ``CHECK_DIR`` the one whose capture check to keep (the same, or a later
recording made after a capture fix). It writes:

- ``tests/fixtures/gpu_runs/<machine>.json.gz``: every run (tags, params, metric histories, the
  artifacts the comparator reads), keyed ``<model>-<scenario>``, a bisect's reruns as
  ``<key>.rerun<N>``; run ids inside the records are replaced by keys (``tests/support/gpu_runs.py``
  puts the new ids back when it loads them into a store);
- ``tests/fixtures/gpu_runs/<machine>_measured.json``: the bisect's report, the timings and the
  capture check (the real capture's GPU section, CUDA left uninitialised, capture's time);
- ``tests/fixtures/gpus/<machine>_real.json``: the machine's NVML readings (made-up UUID).
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

from mlflow_fingerprint import layout

ROOT = Path(__file__).resolve().parents[3]
STEPS = layout.STEPS_ARTIFACT
KEPT_ARTIFACTS = (layout.FINGERPRINT_ARTIFACT, layout.RUN_ARTIFACT, STEPS)
RERUN_OF = layout.TAG_RERUN_OF
# Watched steps kept: every pair's curves part by step 13, and the watch's later steps (32 to 256)
# would double the fixture's size for nothing a test reads.
LAST_WATCHED_STEP = 16


def keyed_runs(folder: Path) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The runs, each with its ``key``, and the map from recorded run ids to keys."""
    runs = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    runs.sort(key=lambda r: r["start_time"])
    keys: dict[str, str] = {}
    reruns: dict[str, int] = {}
    for run in runs:
        if RERUN_OF not in run["tags"]:
            keys[run["run_id"]] = run["name"]
    for run in runs:
        parent = run["tags"].get(RERUN_OF)
        if parent is not None:
            base = keys[parent]
            reruns[base] = reruns.get(base, 0) + 1
            keys[run["run_id"]] = f"{base}.rerun{reruns[base]}"
    return runs, keys


def early_steps(jsonl: str) -> str:
    lines = jsonl.splitlines()
    return "".join(f"{line}\n" for line in lines if json.loads(line)["step"] <= LAST_WATCHED_STEP)


def slim(run: dict[str, Any], keys: dict[str, str]) -> dict[str, Any]:
    artifacts = {k: v for k, v in run["artifacts"].items() if k in KEPT_ARTIFACTS}
    if STEPS in artifacts:
        artifacts[STEPS] = early_steps(artifacts[STEPS])
    tags = dict(run["tags"])
    parent = tags.pop(RERUN_OF, None)
    return {
        "key": keys[run["run_id"]],
        "name": run["name"],
        "status": run["status"],
        "start_time": run["start_time"],
        "end_time": run["end_time"],
        "rerun_of": keys[parent] if parent else None,
        "tags": tags,
        "params": run["params"],
        "metrics": run["metrics"],
        "artifacts": artifacts,
    }


def rekey(report: Any, keys: dict[str, str]) -> Any:
    """A report with every recorded run id replaced by its key."""
    text = json.dumps(report)
    for run_id, key in keys.items():
        text = text.replace(run_id, key)
    return json.loads(text)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs_dir", type=Path)
    p.add_argument("check_dir", type=Path)
    p.add_argument("--machine", default="h100")
    args = p.parse_args()
    export = args.runs_dir / "export"
    runs, keys = keyed_runs(export / "runs")
    summary = json.loads((export / "summary.json").read_text())
    stages = summary["stages"]
    machine = stages["machine"]["result"]
    out = ROOT / "tests" / "fixtures" / "gpu_runs"
    out.mkdir(exist_ok=True)
    fixture = {
        "recorded": {
            "machine": machine,
            "command": "python tests/jobs/gpu_truth/record.py --out DIR",
            "runs": "record.py's SCENARIOS for its MODELS; reruns from its bisect stage",
        },
        "runs": [slim(run, keys) for run in runs],
    }
    data = json.dumps(fixture, sort_keys=True).encode()
    with gzip.GzipFile(out / f"{args.machine}.json.gz", "wb", mtime=0) as f:  # same bytes again
        f.write(data)
    check = json.loads((args.check_dir / "capture_check.json").read_text())
    measured = {
        "machine": machine,
        "bisect": rekey(json.loads((export / "bisect.json").read_text()), keys),
        "bisect_seconds": stages["bisect"]["result"]["seconds"],
        "timing": {
            model: {name: {k: v for k, v in c.items() if k != "samples"} for name, c in m.items()}
            for model, m in stages["timing"]["result"].items()
        },
        "capture_check": {
            k: check[k]
            for k in (
                "gpu_real",
                "gpu_replay_equal",
                "cuda_initialized_after_capture",
                "cuda_before_init",
                "cuda_after_init",
                "compute_apps_before_init",
                "compute_apps_after_init",
                "first_capture_s",
                "timing",
                "torch_props",
            )
        },
    }
    (out / f"{args.machine}_measured.json").write_text(json.dumps(measured, indent=1) + "\n")
    nvml = (args.check_dir / "export" / "nvml_fixture.json").read_text()
    (ROOT / "tests" / "fixtures" / "gpus" / f"{args.machine}_real.json").write_text(nvml)
    print(f"{len(runs)} runs, {len(keys)} keys -> {out}")


if __name__ == "__main__":
    main()
