"""``python -m mlflow_fingerprint.cli.describe_run RUN [PREVIOUS]``: write RUN's MLflow
description, one line on how it differs from PREVIOUS (``present.description``; by default the run
``tracking.store.previous_run`` picks, as ``fingerprint diff RUN`` does), in the store that
$MLFLOW_TRACKING_URI names (the environment, not the command line that ``ps`` shows).

A run starts it, detached, at its end (``run/announce.py``): the comparison imports the comparator
and reads both runs' records and metrics, seconds on a small machine, which the training's exit
must not wait for. It writes nothing where the run already has a description (a person's words
are kept), gives up after ``LIMIT_S``, and prints nothing: nobody is there to read it.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Sequence

from .. import layout

LIMIT_S = 120.0
RUN_ID = re.compile(r"[0-9a-f]{32}")


def describe(run_id: str, previous: str | None = None) -> None:
    from ..compare import diff
    from ..present.description import description
    from ..tracking.store import cli_defaults, client, previous_run

    cli_defaults()
    mlflow_client = client(None)
    run = mlflow_client.get_run(run_id)
    if layout.MLFLOW_DESCRIPTION in run.data.tags:
        return
    if previous is None:
        earlier = previous_run(mlflow_client, run)
        if earlier is None:
            return
        previous = str(earlier.info.run_id)
    line = description(diff(previous, run_id))
    mlflow_client.set_tag(run_id, layout.MLFLOW_DESCRIPTION, line)


def main(argv: Sequence[str]) -> int:
    """Arguments are validated before use: they come from a command line anyone can type."""
    if len(argv) not in (1, 2) or not all(RUN_ID.fullmatch(a) for a in argv):
        print("usage: describe_run RUN_ID [PREVIOUS_RUN_ID]", file=sys.stderr)
        return 2
    worker = threading.Thread(target=describe, args=tuple(argv), daemon=True)
    worker.start()
    worker.join(LIMIT_S)
    return 0


if __name__ == "__main__":
    from .collector import held_off

    with held_off():  # a diff's imports, beside the user's next training: as cheap as it can be
        code = main(sys.argv[1:])
    sys.exit(code)
