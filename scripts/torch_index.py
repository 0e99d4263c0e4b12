"""Which index torch's wheel comes from, printed as pip arguments for ``make``.

Why: PyPI's default torch wheel for Linux is the CUDA build (several GB with its NVIDIA
libraries). Where no NVIDIA driver is present it can never use a GPU, so torch's CPU build is
taken from PyTorch's own CPU index (https://download.pytorch.org/whl/cpu). Where that index cannot
be reached within a few seconds (a CI machine that may only talk to package registries), nothing
is printed and pip resolves torch as it would anyway; where a driver is present, nothing is
printed either, and pip takes the CUDA build.

``python scripts/torch_index.py BUILD`` with BUILD ``cpu`` or ``cuda`` (the Makefile's
``TORCH_BUILD``, ``cpu`` unless it finds a driver). Standard library only: it runs before the
venv exists.
"""

from __future__ import annotations

import sys
import threading
import urllib.request

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# The probe's bound: the whole decision, unreachable index included, stays under 10 s.
PROBE_TIMEOUT_S = 5.0


def reachable(url: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether ``url`` answers within ``timeout`` seconds, name lookup included (urlopen's own
    timeout bounds each socket operation, not the DNS lookup before them): any failure is no."""
    answered: list[bool] = []

    def probe() -> None:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                answered.append(200 <= response.status < 400)
        except Exception:
            answered.append(False)

    worker = threading.Thread(target=probe, daemon=True)
    worker.start()
    worker.join(timeout)
    return bool(answered and answered[0])


def pip_arguments(build: str, index_reachable: bool) -> list[str]:
    """The arguments that make pip install torch's ``build`` (none: pip's own resolution)."""
    if build == "cpu" and index_reachable:
        return ["--index-url", CPU_INDEX]
    return []


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("cpu", "cuda"):
        print("usage: torch_index.py cpu|cuda", file=sys.stderr)
        return 2
    build = argv[0]
    index_reachable = build == "cpu" and reachable(f"{CPU_INDEX}/torch/")
    if build == "cpu" and not index_reachable:
        print(
            f"torch: {CPU_INDEX} not reachable; pip resolves torch from its usual indexes",
            file=sys.stderr,
        )
    print(" ".join(pip_arguments(build, index_reachable)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
