"""Every probe is isolated and bounded in time: failures become ``unavailable`` fields."""

from __future__ import annotations

import threading
import time
from typing import Any

from mlflow_fingerprint.capture.core import make_context, run_probes


def ok(ctx: Any) -> dict[str, Any]:
    return {"value": 1}


def boom(ctx: Any) -> dict[str, Any]:
    raise PermissionError("no access to /dev/nvidia0")


def exits(ctx: Any) -> dict[str, Any]:
    raise SystemExit(3)


def not_a_dict(ctx: Any) -> Any:
    return 42


def test_raising_probes_become_unavailable_and_others_survive() -> None:
    out = run_probes(make_context(), {"a": ok, "b": boom, "c": exits, "d": not_a_dict}, 5.0)
    assert out["a"] == {"value": 1}
    assert out["b"] == {"unavailable": "probe failed: PermissionError: no access to /dev/nvidia0"}
    assert out["c"]["unavailable"].startswith("probe failed: SystemExit")
    assert out["d"] == {"unavailable": "probe returned no record"}


def test_a_hanging_probe_is_cut_at_the_deadline() -> None:
    release = threading.Event()

    def hangs(ctx: Any) -> dict[str, Any]:
        release.wait(30)
        return {"late": True}

    start = time.monotonic()
    out = run_probes(make_context(), {"fast": ok, "slow": hangs}, 0.3)
    elapsed = time.monotonic() - start
    release.set()
    assert elapsed < 2.0
    assert out["fast"] == {"value": 1}
    assert out["slow"] == {"unavailable": "probe timed out after 0.3s"}
