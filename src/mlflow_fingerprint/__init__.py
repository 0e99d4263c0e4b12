"""mlflow-fingerprint: record why a PyTorch run's numbers are what they are, and explain diffs.

The public names are imported on first use (PEP 562), so ``import mlflow_fingerprint`` and
``fingerprint --help`` do not pay for the capture probes, the comparator or the run wrapper.
"""

from __future__ import annotations

from .lazy import keep_public_names, lazy_names

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; type checkers know the name
if TYPE_CHECKING:
    from .capture import RunInfo, capture
    from .compare import Report, diff
    from .errors import FingerprintError
    from .explain import ExplainOptions, Explanation, explain
    from .model.fingerprint import Fingerprint
    from .prove import BisectOptions, BisectResult, DryRun, RerunOptions, RerunResult, bisect, rerun
    from .run import dataloader_generator, fingerprinted, log_metrics, seed_everything, seed_worker
    from .run.options import FingerprintOptions
    from .run.watch import watch
    from .version import __version__

# public name -> the submodule that defines it
_SOURCES = {
    "BisectOptions": ".prove",
    "BisectResult": ".prove",
    "DryRun": ".prove",
    "ExplainOptions": ".explain",
    "Fingerprint": ".model.fingerprint",
    "FingerprintError": ".errors",
    "FingerprintOptions": ".run.options",
    "Explanation": ".explain",
    "Report": ".compare",
    "RerunOptions": ".prove",
    "RerunResult": ".prove",
    "RunInfo": ".capture",
    "__version__": ".version",
    "bisect": ".prove",
    "capture": ".capture",
    "dataloader_generator": ".run",
    "diff": ".compare",
    "explain": ".explain",
    "fingerprinted": ".run",
    "log_metrics": ".run",
    "rerun": ".prove",
    "seed_everything": ".run",
    "seed_worker": ".run",
    "watch": ".run.watch",
}

__all__ = [
    "BisectOptions",
    "BisectResult",
    "DryRun",
    "ExplainOptions",
    "Explanation",
    "Fingerprint",
    "FingerprintError",
    "FingerprintOptions",
    "Report",
    "RerunOptions",
    "RerunResult",
    "RunInfo",
    "__version__",
    "bisect",
    "capture",
    "dataloader_generator",
    "diff",
    "explain",
    "fingerprinted",
    "log_metrics",
    "rerun",
    "seed_everything",
    "seed_worker",
    "watch",
]


__getattr__ = lazy_names(__name__, _SOURCES)


def __dir__() -> list[str]:
    """The public names, loaded or not (for completion), and the dunders; not the helpers."""
    return sorted({*__all__, *(name for name in globals() if name.startswith("__"))})


keep_public_names(__name__, _SOURCES)  # the CLI imports the ``capture`` subpackage
