"""Record the GPU truth on a machine with an NVIDIA GPU: everything the GPU fixtures and their tests
are made of, in one command that ends well inside ten minutes.

    python tests/jobs/gpu_truth/record.py --out DIR

What it does, each stage bounded in time and its failure written down rather than raised:

1. ``nvml``: the machine's NVML readings, every call the GPU probe makes, through
   ``capture.nvml_replay.record_readings`` (the UUID replaced by a made-up one in the copy
   meant for the repository).
2. ``capture``: in a fresh process, capture through the real NVML and through the replay of what
   was just recorded (their ``gpu`` sections must be equal), whether capture initialised CUDA
   (``torch.cuda.is_initialized()`` and the compute processes ``nvidia-smi`` lists, before and,
   as a control, after the program initialises CUDA itself), the torch.cuda facts capture reads
   once CUDA is up, and capture's time against ``torch.utils.collect_env.get_env_info()``.
3. ``runs``: the common reproducibility cases of docs/design.md, "The problem" (``SCENARIOS``),
   for a small CNN and a small transformer, each a ``train.py`` process decorated by
   ``mfp.fingerprinted`` in a git repository of its own, into one sqlite store.
4. ``diffs``: ``fingerprint diff`` of every pair (``PAIRS``), as JSON and text.
5. ``bisect``: ``fingerprint bisect`` of TF32 off (1 thread) against TF32 on (2 threads).
6. ``timing``: deterministic mode's and cuDNN autotuning's cost on a short training.
7. ``export``: every run of the store (tags, params, metric histories, artifacts) as one JSON file
   per run, the form ``tests/support/gpu_runs.py`` loads back into a store.

Everything is packed into ``--out``/``gpu_truth.tar.gz``, with ``summary.json`` beside it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MADE_UP_UUID = "GPU-00000000-1111-2222-3333-444444444444"

# Options every run passes, so a pair differs in exactly the options its scenario changes.
COMMON = {
    "--seed": "0",
    "--tf32": "off",
    "--tf32-api": "precision",
    "--cudnn-benchmark": "off",
    "--amp": "off",
    "--blas": "default",
    "--threads": "1",
}

# name -> options that differ from COMMON (flags map to None)
SCENARIOS: dict[str, dict[str, str | None]] = {
    "base": {},
    "base2": {},
    "tf32": {"--tf32": "on"},
    "legacy_tf32": {"--tf32": "on", "--tf32-api": "legacy"},
    "legacy_ieee": {"--tf32": "off", "--tf32-api": "legacy"},
    "bench": {"--cudnn-benchmark": "on"},
    "bench2": {"--cudnn-benchmark": "on"},
    "scatter_det": {"--scatter": None, "--deterministic": None},
    "scatter": {"--scatter": None},
    "scatter2": {"--scatter": None},
    "cpu": {"--device": "cpu"},
    "bf16": {"--amp": "bf16"},
    "cublas": {"--blas": "cublas"},
    "cublaslt": {"--blas": "cublaslt"},
    "tf32_threads": {"--tf32": "on", "--threads": "2"},
}

# (a, b, what the pair shows)
PAIRS: tuple[tuple[str, str, str], ...] = (
    ("base", "base2", "the same run twice (deterministic kernels only?)"),
    ("base", "tf32", "TF32 off vs on (fp32_precision API)"),
    ("legacy_ieee", "legacy_tf32", "TF32 off vs on (legacy allow_tf32 API)"),
    ("base", "legacy_ieee", "TF32 off through either API"),
    ("base", "bench", "cudnn.benchmark off vs on"),
    ("bench", "bench2", "cudnn.benchmark on, twice"),
    ("scatter_det", "scatter", "deterministic algorithms on vs off (index_add_)"),
    ("scatter", "scatter2", "deterministic algorithms off, twice (index_add_)"),
    ("cpu", "base", "the same seeded script on the CPU vs on the GPU"),
    ("base", "bf16", "fp32 vs bf16 autocast"),
    ("cublas", "cublaslt", "cuBLAS vs cuBLASLt as the preferred BLAS library"),
    ("base", "tf32_threads", "TF32 and the thread count (the bisect pair)"),
)

MODELS = ("cnn", "transformer")
TIMINGS: dict[str, list[str]] = {
    "default": [],
    "deterministic": ["--deterministic"],
    "benchmark": ["--cudnn-benchmark", "on"],
    "scatter": ["--scatter"],
    "scatter_deterministic": ["--scatter", "--deterministic"],
}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def run_name(model: str, scenario: str) -> str:
    return f"{model}-{scenario}"


def argv_for(model: str, scenario: str, device: str, steps: int) -> list[str]:
    options = {"--model": model, "--device": device, "--steps": str(steps), **COMMON}
    flags = []
    for key, value in SCENARIOS[scenario].items():
        if value is None:
            flags.append(key)
        else:
            options[key] = value
    return [*(x for kv in options.items() for x in kv), *flags]


class Recorder:
    """The work folder, the store, the project repository and what each stage found."""

    def __init__(
        self, work: Path, device: str, steps: int, deadline: float, scenarios: list[str]
    ) -> None:
        self.work = work
        self.scenarios = scenarios
        self.out = work / "export"  # what is packed
        self.device = device
        self.steps = steps
        self.deadline = deadline
        self.repo = work / "project"
        self.store = work / "store"
        self.uri = f"sqlite:///{self.store / 'mlflow.db'}"
        self.out.mkdir(parents=True)
        self.summary: dict[str, Any] = {"stages": {}}
        self.ids: dict[str, str] = {}

    # -- plumbing ----------------------------------------------------------------------------

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_FINGERPRINT_")}
        env.update(
            {
                "MLFLOW_TRACKING_URI": self.uri,
                "MLFLOW_FINGERPRINT_QUIET": "1",
                "MLFLOW_FINGERPRINT_SPOOL": str(self.work / "spool"),
                "MLFLOW_LOGGING_LEVEL": "WARNING",
                "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
                "PYTHONUNBUFFERED": "1",
            }
        )
        env.update(extra)
        return env

    def run(
        self, cmd: list[str], timeout: float, cwd: Path | None = None, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        left = self.deadline - time.monotonic()
        return subprocess.run(
            cmd,
            cwd=cwd or self.repo,
            env=self.env(**extra),
            capture_output=True,
            text=True,
            timeout=max(5.0, min(timeout, left)),
            check=False,
        )

    def stage(self, name: str, fn: Callable[[], Any], reserve_s: float = 0.0) -> None:
        """Run one stage; its result or its failure goes into the summary, never up."""
        start = time.monotonic()
        if reserve_s and self.deadline - start < reserve_s:
            self.summary["stages"][name] = {"skipped": "too little time left"}
            log(f"{name}: skipped, too little time left")
            return
        log(f"{name}: start")
        try:
            result = fn()
            entry = {"ok": True, "result": result}
        except Exception as exc:
            entry = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            (self.out / f"{name}.traceback.txt").write_text(traceback.format_exc())
        entry["seconds"] = round(time.monotonic() - start, 1)
        self.summary["stages"][name] = entry
        log(f"{name}: {'ok' if entry.get('ok') else entry.get('error')} ({entry['seconds']} s)")
        (self.out / "summary.json").write_text(json.dumps(self.summary, indent=1, default=str))

    # -- stages ------------------------------------------------------------------------------

    def machine(self) -> dict[str, Any]:
        def out(cmd: list[str]) -> str:
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=False)
                return (done.stdout + done.stderr).strip()
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"{type(exc).__name__}: {exc}"

        import torch

        return {
            "nvidia_smi": out(["nvidia-smi", "-L"]),
            "driver": out(
                ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv"]
            ),
            "python": sys.version,
            "torch": torch.__version__,
            "torch_cuda": torch.version.cuda,
            "git": out(["git", "--version"]),
            "cpu_count": os.cpu_count(),
        }

    def setup(self) -> dict[str, Any]:
        """The project repository (train.py, models.py; one commit) and an existing store with
        the experiment, so parallel runs never race to create either."""
        import mlflow

        self.repo.mkdir(parents=True)
        for name in ("train.py", "models.py"):
            shutil.copy(HERE / name, self.repo / name)
        (self.repo / ".gitignore").write_text("__pycache__/\nmlruns/\n")
        git = ["git", "-c", "user.name=gpu", "-c", "user.email=gpu@example.com"]
        for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "gpu"]):
            subprocess.run([*git, *cmd], cwd=self.repo, check=True, capture_output=True)
        self.store.mkdir(parents=True)
        client = mlflow.MlflowClient(self.uri)
        client.create_experiment("gpu-truth", artifact_location=(self.store / "a").as_uri())
        return {"repo": str(self.repo), "uri": self.uri}

    def nvml(self) -> dict[str, Any]:
        from mlflow_fingerprint.capture.nvml_replay import record_readings

        recording = record_readings(recorded_from="real machine (gpu_truth/record.py)")
        (self.work / "nvml_real.json").write_text(json.dumps(recording, indent=2))
        fixture = json.loads(json.dumps(recording))
        for device in fixture.get("devices", []):
            if isinstance(device.get("nvmlDeviceGetUUID"), str):
                device["nvmlDeviceGetUUID"] = MADE_UP_UUID
        (self.out / "nvml_fixture.json").write_text(json.dumps(fixture, indent=2) + "\n")
        return {"devices": len(recording.get("devices", [])), "system": recording.get("system")}

    def capture(self) -> Any:
        done = self.run(
            [sys.executable, str(HERE / "record.py"), "capture-check", str(self.work)],
            timeout=180,
            cwd=self.work,
        )
        (self.out / "capture_check.log").write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            raise RuntimeError(f"capture-check exited {done.returncode}: {done.stderr[-800:]}")
        return json.loads((self.work / "capture_check.json").read_text())

    def cuda_init(self) -> dict[str, Any]:
        """Which probe, and which call, initialises CUDA: each alone in a fresh process."""
        from mlflow_fingerprint.capture.core import PROBES

        checks = [("probe", name) for name in PROBES]
        checks += [("call", str(i)) for i in range(len(CUDA_INIT_SUSPECTS))]

        def one(check: tuple[str, str]) -> dict[str, Any]:
            cmd = [sys.executable, str(HERE / "record.py"), "init-check", *check]
            done = self.run(cmd, timeout=90, cwd=self.work)
            try:
                return json.loads(done.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                return {"check": check, "exit": done.returncode, "stderr": done.stderr[-400:]}

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            return {"results": list(pool.map(one, checks))}

    def runs(self) -> dict[str, Any]:
        jobs = [(m, s) for m in MODELS for s in self.scenarios]

        def one(job: tuple[str, str]) -> tuple[str, Any]:
            model, scenario = job
            name = run_name(model, scenario)
            device = "cpu" if scenario == "cpu" else self.device
            cmd = [
                sys.executable,
                "train.py",
                *argv_for(model, scenario, device, self.steps),
                "--run-name",
                name,
            ]
            start = time.monotonic()
            done = self.run(cmd, timeout=240)
            seconds = round(time.monotonic() - start, 1)
            (self.work / "logs").mkdir(exist_ok=True)
            (self.work / "logs" / f"{name}.log").write_text(done.stdout + done.stderr)
            if done.returncode != 0:
                return name, {"exit": done.returncode, "stderr": done.stderr[-1500:]}
            line = json.loads(done.stdout.strip().splitlines()[-1])
            self.ids[name] = line["run_id"]
            return name, {"seconds": seconds, **line}

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            return dict(pool.map(one, jobs))

    def diffs(self) -> dict[str, Any]:
        folder = self.work / "diffs"
        folder.mkdir(exist_ok=True)
        jobs = [(m, a, b) for m in MODELS for a, b, _ in PAIRS]

        def one(job: tuple[str, str, str]) -> tuple[str, Any]:
            model, a, b = job
            key = f"{model}-{a}-vs-{b}"
            ida, idb = self.ids.get(run_name(model, a)), self.ids.get(run_name(model, b))
            if not (ida and idb):
                return key, {"missing": True}
            cli = [sys.executable, "-m", "mlflow_fingerprint.cli", "diff", ida, idb]
            as_json = self.run([*cli, "--format", "json"], timeout=120)
            text = self.run([*cli, "--all"], timeout=120, COLUMNS="120")
            (folder / f"{key}.json").write_text(as_json.stdout)
            (folder / f"{key}.txt").write_text(text.stdout + text.stderr)
            try:
                report = json.loads(as_json.stdout)
            except ValueError:
                return key, {"exit": as_json.returncode, "stderr": as_json.stderr[-800:]}
            top = (report.get("differences") or [{}])[0]
            metrics = report.get("metrics") or [{}]
            return key, {
                "exit": as_json.returncode,
                "verdict": report.get("verdict"),
                "rank1": top.get("field"),
                "first_divergence_step": metrics[0].get("first_divergence_step"),
                "rel_diff_final": metrics[0].get("rel_diff"),
                "enablers": [e.get("field") for e in report.get("enablers", [])],
            }

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            return dict(pool.map(one, jobs))

    def bisect(self) -> dict[str, Any]:
        a, b = self.ids["cnn-base"], self.ids["cnn-tf32_threads"]
        cmd = [sys.executable, "-m", "mlflow_fingerprint.cli", "bisect", a, b, "--format", "json"]
        start = time.monotonic()
        done = self.run(cmd, timeout=300)
        (self.out / "bisect.json").write_text(done.stdout)
        (self.out / "bisect.stderr.txt").write_text(done.stderr)
        report = json.loads(done.stdout)
        return {
            "exit": done.returncode,
            "seconds": round(time.monotonic() - start, 1),
            "verdict": report.get("verdict"),
            "causes": [c.get("field") for c in report.get("causes", [])],
            "ruled_out": report.get("ruled_out"),
            "reruns": len(report.get("reruns", [])),
        }

    def timing(self) -> dict[str, Any]:
        """Each configuration once, in a process of its own, one after the other on a quiet GPU."""
        results: dict[str, dict[str, list[dict[str, float]]]] = {}
        for _repeat in range(1):
            for model in MODELS:
                for name, extra in TIMINGS.items():
                    cmd = [
                        sys.executable,
                        "train.py",
                        "--time-only",
                        "--model",
                        model,
                        "--device",
                        self.device,
                        "--steps",
                        "300",
                        *extra,
                    ]
                    done = self.run(cmd, timeout=90)
                    if done.returncode == 0:
                        line = json.loads(done.stdout.strip().splitlines()[-1])
                        results.setdefault(model, {}).setdefault(name, []).append(line)
                    else:
                        results.setdefault(model, {}).setdefault(name, []).append(
                            {"error": done.stderr[-400:]}
                        )
        summary: dict[str, Any] = {}
        for model, configs in results.items():
            summary[model] = {}
            for name, samples in configs.items():
                ok = [s for s in samples if "error" not in s]
                summary[model][name] = {
                    "ms_per_step": statistics.median(s["ms_per_step"] for s in ok) if ok else None,
                    "total_s": statistics.median(s["total_s"] for s in ok) if ok else None,
                    "samples": samples,
                }
        return summary

    def export(self) -> dict[str, Any]:
        """Every run of the experiment as ``runs/<run name>.json``."""
        import mlflow

        client = mlflow.MlflowClient(self.uri)
        experiment = client.get_experiment_by_name("gpu-truth")
        folder = self.out / "runs"
        shutil.rmtree(folder, ignore_errors=True)  # exported again after the bisect's reruns
        folder.mkdir()
        names = []
        for run in client.search_runs([experiment.experiment_id], max_results=1000):
            record = export_run(client, run, self.work / "downloads")
            name = record["name"]
            if (folder / f"{name}.json").exists():
                name = f"{name}-{run.info.run_id[:8]}"
            (folder / f"{name}.json").write_text(json.dumps(record, indent=1, sort_keys=True))
            names.append(name)
        return {"runs": sorted(names)}


def export_run(client: Any, run: Any, downloads: Path) -> dict[str, Any]:
    """One run as plain JSON: what ``tests/support/gpu_runs.py`` logs back."""
    run_id = run.info.run_id
    metrics = {
        key: [[m.step, m.value, m.timestamp] for m in client.get_metric_history(run_id, key)]
        for key in run.data.metrics
    }
    artifacts: dict[str, str] = {}
    local = Path(client.download_artifacts(run_id, "", str(downloads / run_id)))
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        if path.stat().st_size <= 2_000_000:
            artifacts[str(path.relative_to(local))] = path.read_text(errors="replace")
    return {
        "name": run.info.run_name,
        "run_id": run_id,
        "status": run.info.status,
        "start_time": run.info.start_time,
        "end_time": run.info.end_time,
        "tags": dict(run.data.tags),
        "params": dict(run.data.params),
        "metrics": metrics,
        "artifacts": artifacts,
    }


# Calls a probe makes that might initialise CUDA, each tried alone in a fresh process.
CUDA_INIT_SUSPECTS = (
    "torch.backends.cuda.preferred_blas_library()",
    "torch.backends.cuda.preferred_linalg_library()",
    "torch.backends.cudnn.version()",
    "torch.backends.cudnn.is_available()",
    "torch.cuda.nccl.version()",
    "torch.cuda.is_available()",
    "torch.cuda.device_count()",
    "torch.backends.cuda.flash_sdp_enabled()",
    "torch.backends.cuda.cudnn_sdp_enabled()",
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
    "torch.backends.cuda.matmul.allow_fp16_accumulation",
    "torch.backends.cuda.matmul.fp32_precision",
    "torch.backends.cudnn.conv.fp32_precision",
    "torch.backends.cudnn.allow_tf32",
    "torch.backends.cuda.matmul.allow_tf32",
    "torch.get_float32_matmul_precision()",
    "torch.backends.cudnn.benchmark_limit",
    "torch.utils.deterministic.fill_uninitialized_memory",
    "torch.are_deterministic_algorithms_enabled()",
    "torch.initial_seed()",
)


def init_check(kind: str, name: str) -> None:
    """Whether one probe (``probe``) or one call (``call``) initialises CUDA, in this fresh
    process; prints one JSON line."""
    import torch

    result: dict[str, Any] = {"kind": kind, "name": name}
    try:
        if kind == "probe":
            from mlflow_fingerprint.capture.core import PROBES, make_context

            PROBES[name](make_context())
        else:
            eval(CUDA_INIT_SUSPECTS[int(name)], {"torch": torch})
            result["name"] = CUDA_INIT_SUSPECTS[int(name)]
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    result["initialized"] = torch.cuda.is_initialized()
    print(json.dumps(result), flush=True)


def compute_apps() -> str:
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        return (done.stdout + done.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"


def capture_check(work: Path) -> None:
    """In a fresh process: capture's GPU section through real NVML and through the replay, CUDA
    left uninitialised, the torch.cuda facts once the program initialised it, and the time."""
    import torch
    from torch.utils import collect_env

    import mlflow_fingerprint as mfp
    from mlflow_fingerprint.capture.nvml_replay import NvmlReplay

    result: dict[str, Any] = {"pid": os.getpid()}
    start = time.perf_counter()
    real = mfp.capture().to_dict()
    result["first_capture_s"] = time.perf_counter() - start
    result["cuda_initialized_after_capture"] = torch.cuda.is_initialized()
    result["compute_apps_before_init"] = compute_apps()
    recording = json.loads((work / "nvml_real.json").read_text())
    replayed = mfp.capture(nvml=NvmlReplay(recording, "nvml_real.json")).to_dict()

    def gpu(record: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in record["gpu"].items() if k != "source"}

    result["gpu_real"] = real["gpu"]
    result["gpu_replay_equal"] = gpu(real) == gpu(replayed)
    result["gpu_replay"] = replayed["gpu"]
    result["cuda_before_init"] = real["cuda"]
    result["numerics_before_init"] = real["numerics"]
    result["cuda_initialized_after_replay"] = torch.cuda.is_initialized()

    # Timing, both warmed, alternated: capture() against collect_env.get_env_info().
    collect_env.get_env_info()
    ours, theirs = [], []
    for _ in range(5):
        t = time.perf_counter()
        mfp.capture()
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        collect_env.get_env_info()
        theirs.append(time.perf_counter() - t)
    result["timing"] = {
        "capture_median_s": statistics.median(ours),
        "collect_env_median_s": statistics.median(theirs),
        "ratio": statistics.median(theirs) / statistics.median(ours),
        "capture_s": ours,
        "collect_env_s": theirs,
    }
    result["cuda_initialized_after_timing"] = torch.cuda.is_initialized()

    if not torch.cuda.is_available():  # a rehearsal on a machine without a GPU
        (work / "capture_check.json").write_text(json.dumps(result, indent=1, default=str))
        return
    # The program initialises CUDA itself: capture now reads torch.cuda.
    x = torch.ones(256, 256, device="cuda")
    (x @ x).sum().item()
    after = mfp.capture().to_dict()
    result["compute_apps_after_init"] = compute_apps()
    result["gpu_after_init"] = after["gpu"]
    result["cuda_after_init"] = after["cuda"]
    result["numerics_after_init"] = after["numerics"]
    result["determinism_after_init"] = after["determinism"]
    props = torch.cuda.get_device_properties(0)
    result["torch_props"] = {
        "name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "sm_count": props.multi_processor_count,
        "memory_mib": props.total_memory // (1024 * 1024),
        "cudnn": torch.backends.cudnn.version(),
        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
    }
    (work / "capture_check.json").write_text(json.dumps(result, indent=1, default=str))
    print(json.dumps({k: result[k] for k in ("gpu_replay_equal", "timing")}, default=str))


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "capture-check":
        capture_check(Path(sys.argv[2]))
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "init-check":
        init_check(sys.argv[2], sys.argv[3])
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--work", type=Path, default=Path("/tmp/gpu-truth"))
    p.add_argument("--device", default="cuda")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--budget-s", type=float, default=540.0)
    p.add_argument("--skip", nargs="*", default=[], help="stages to leave out")
    p.add_argument("--scenarios", nargs="*", default=list(SCENARIOS), choices=list(SCENARIOS))
    args = p.parse_args()

    os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"  # for this process's export too
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    args.out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.budget_s
    rec = Recorder(args.work, args.device, args.steps, deadline, args.scenarios)
    try:
        rec.stage("machine", rec.machine)
        rec.stage("setup", rec.setup)
        stages: list[tuple[str, Callable[[], Any], float]] = [
            ("nvml", rec.nvml, 0),
            ("capture", rec.capture, 60),
            ("cuda_init", rec.cuda_init, 60),
            ("runs", rec.runs, 120),
            ("export", rec.export, 0),
            ("diffs", rec.diffs, 60),
            ("bisect", rec.bisect, 100),
            ("export", rec.export, 0),
            ("timing", rec.timing, 70),
        ]
        for name, fn, reserve in stages:
            if name not in args.skip:
                rec.stage(name, fn, reserve)
    finally:
        rec.stage("export", rec.export)  # reserve 0: whatever time is left, runs are kept
        with tarfile.open(args.out / "gpu_truth.tar.gz", "w:gz") as tar:
            tar.add(rec.out, arcname="export")
            for name in ("diffs", "logs", "capture_check.json", "nvml_real.json"):
                if (args.work / name).exists():
                    tar.add(args.work / name, arcname=name)
        shutil.copy(rec.out / "summary.json", args.out / "summary.json")
        log("packed " + str(args.out / "gpu_truth.tar.gz"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
