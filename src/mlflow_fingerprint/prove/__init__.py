"""Controlled reruns: proof of what moved the numbers (docs/design.md, "Controlled reruns" and
"Package layout, with proof").

``rerun`` runs a recorded training again here and says whether it reproduces; ``bisect`` reruns
run A with run B's settable values until the smallest set that moves A's curve is found. Both
return frozen results whose ``to_dict()`` is the command line's JSON. The parts: ``recipe`` (what
a recorded run needs to run again, checked), ``worktree`` (its code), ``launch`` (one rerun:
command, directory, variables, overrides), ``process`` (the executor protocol and the local
process group), ``rerunner`` (reruns of one run, found and ended), ``curves`` (whose curve a
rerun followed), ``search`` (the halving, a pure function), ``results``, ``options`` (what
``rerun`` and ``bisect`` take, as the API and the command line build it).

Nothing imports this package until a rerun is asked for (``mlflow_fingerprint`` loads it on
first use of ``mfp.rerun`` or ``mfp.bisect``).
"""

from __future__ import annotations

from .bisection import bisect
from .options import BisectOptions, RerunOptions
from .reproduce import rerun
from .results import BisectResult, DryRun, RerunResult

__all__ = [
    "BisectOptions",
    "BisectResult",
    "DryRun",
    "RerunOptions",
    "RerunResult",
    "bisect",
    "rerun",
]
