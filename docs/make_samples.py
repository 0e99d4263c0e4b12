"""Regenerate the README's sample outputs from real captures and the current code.

The two fingerprints in docs/samples/ were captured by this script through the replay of NVML
readings recorded on a real A100, with TF32 really switched on and off in torch; the README's
``fingerprint diff`` block is what the current comparator prints for them, and
tests/test_readme.py fails when the two drift apart.

    python docs/make_samples.py            # recapture the fingerprints and rewrite the README
    python docs/make_samples.py --check    # exit 1 if the README block is stale
    python docs/make_samples.py --explain  # train the sweep of tests/support/sweep.py (about
                                           # 30 s) and put `fingerprint explain`'s transcript in
                                           # the README (its numbers are this machine's; the
                                           # sweep's system test checks its words and columns)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "docs" / "samples"
README = ROOT / "README.md"
PAIR = (SAMPLES / "a100_tf32_on.json", SAMPLES / "a100_tf32_off.json")
MARK = "diff-sample"


def capture_pair() -> None:
    import torch

    import mlflow_fingerprint as mfp
    from mlflow_fingerprint.capture.nvml_replay import NvmlReplay

    replay = ROOT / "tests" / "fixtures" / "gpus" / "a100.json"
    records = []
    for precision in ("tf32", "ieee"):
        torch.backends.cuda.matmul.fp32_precision = precision
        torch.backends.cudnn.conv.fp32_precision = precision
        torch.manual_seed(0)
        record = mfp.capture(nvml=NvmlReplay.from_file(replay)).to_dict()
        record["cuda"]["torch_built_with"] = "13.0"  # as the CUDA wheel of this torch says
        record["cuda"]["computed_on"] = "cuda"  # as a run that trained on the GPU reads
        records.append(record)
    # Written only once both are captured: the first file written would make the second
    # capture see another uncommitted diff.
    for path, record in zip(PAIR, records, strict=True):
        path.write_text(json.dumps(record, indent=1) + "\n")


def diff_output() -> str:
    # Relative paths, as a reader types them: the report wraps lines that hold a path, so an
    # absolute one would make the block depend on where the repository is checked out.
    paths = [str(p.relative_to(ROOT)) for p in PAIR]
    out = subprocess.run(
        [sys.executable, "-m", "mlflow_fingerprint.cli", "diff", *paths],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "100"},  # the width the README shows, whatever the shell's
    )
    return f"$ fingerprint diff {' '.join(paths)}\n{out.stdout}"


def block(text: str) -> str:
    return f"<!-- {MARK}:start -->\n```text\n{text.rstrip()}\n```\n<!-- {MARK}:end -->"


def readme_block(readme: str) -> str | None:
    match = re.search(rf"<!-- {MARK}:start -->.*?<!-- {MARK}:end -->", readme, re.S)
    return match.group(0) if match else None


EXPLAIN_MARK = "explain-sample"


def explain_output() -> str:
    """The sweep trained into a fresh store, and what `fingerprint explain sweep` prints."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mfp-sample-") as tmp:
        uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        env = {
            **os.environ,
            "MLFLOW_TRACKING_URI": uri,
            "MLFLOW_FINGERPRINT_SPOOL": str(Path(tmp) / "spool"),
            "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]),
        }
        sweep = [sys.executable, str(ROOT / "tests" / "support" / "sweep.py"), uri]
        subprocess.run(sweep, env=env, cwd=tmp, check=True, capture_output=True)
        command = [sys.executable, "-m", "mlflow_fingerprint.cli", "explain", "sweep"]
        out = subprocess.run(command, env=env, cwd=tmp, capture_output=True, text=True, check=True)
    return f"$ fingerprint explain sweep\n{out.stdout}"


def replace_block(readme: str, mark: str, text: str) -> str:
    pattern = rf"<!-- {mark}:start -->.*?<!-- {mark}:end -->"
    if not re.search(pattern, readme, re.S):
        raise SystemExit(f"README.md has no <!-- {mark}:start/end --> markers")
    new = f"<!-- {mark}:start -->\n```text\n{text.rstrip()}\n```\n<!-- {mark}:end -->"
    return re.sub(pattern, lambda _: new, readme, flags=re.S)


def main() -> int:
    readme = README.read_text()
    if "--explain" in sys.argv:
        README.write_text(replace_block(readme, EXPLAIN_MARK, explain_output()))
        return 0
    if "--check" in sys.argv:
        return 0 if readme_block(readme) == block(diff_output()) else 1
    capture_pair()
    current = readme_block(readme)
    if current is None:
        raise SystemExit(f"README.md has no <!-- {MARK}:start/end --> markers")
    README.write_text(readme.replace(current, block(diff_output())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
