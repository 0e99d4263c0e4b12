"""``fingerprint``: argument parsing and dispatch only.

Handlers are imported by name when their command runs, so ``fingerprint --help`` (and any command
that does not need them) never pays for importing torch or mlflow.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import NoReturn, TextIO

from ..version import __version__

EXIT_BAD_INPUT = 2
# What ``tracking.credentials`` may set for MLflow (named here: this module imports no tracking).
CREDENTIALS = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")

# command -> "module:function" under mlflow_fingerprint.cli
HANDLERS = {
    "capture": "cmd_capture:run",
    "show": "cmd_show:run",
    "diff": "cmd_diff:run",
    "audit": "cmd_audit:run",
    "find": "cmd_find:run",
    "sync": "cmd_sync:run",
    "rerun": "cmd_rerun:run",
    "bisect": "cmd_bisect:run",
    "explain": "cmd_explain:run",
}


def _tracking(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tracking-uri",
        metavar="URI",
        help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else MLflow's default)",
    )
    p.add_argument(
        "-e", "--experiment", metavar="NAME", help="experiment in which to look up run names"
    )


def _output(p: argparse.ArgumentParser, formats: Sequence[str]) -> None:
    p.add_argument("--format", choices=formats, default=formats[0], help="output format")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")


def _rerun_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--until-step",
        type=int,
        metavar="N",
        help="stop each rerun once a metric past step N is logged (bisect's default: the step "
        "where A and B part, plus 2)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="end a rerun whose training runs longer than this, its process group and its run "
        "(marked FAILED) with it (default: 3x the run's own wall time plus 2 minutes)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the commit, entry point, argv, working directory, environment variables "
        "and overrides each rerun would use, and run nothing",
    )
    p.add_argument(
        "--executor",
        metavar="ray://HOST:PORT|ray+http://HOST:PORT|slurm[:PARTITION]",
        help="run each rerun as a job on a Ray or Slurm cluster, on a node of the recorded "
        "machine kind (docs/clusters.md); default: here",
    )


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line (argparse prints its usage first); the
    subcommands' parsers are of this class too (``add_subparsers`` makes them so)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="fingerprint",
        description="Record the environment fingerprint of PyTorch runs in MLflow and explain why "
        "two runs differ.",
    )
    parser.add_argument("--version", action="version", version=f"mlflow-fingerprint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("capture", help="fingerprint this environment now")
    _output(p, ("text", "json"))

    p = sub.add_parser("show", help="print a run's fingerprint")
    p.add_argument("run", metavar="RUN", help="run id, runs:/<id>, run name (with -e) or JSON file")
    _tracking(p)
    _output(p, ("text", "json"))

    p = sub.add_parser("diff", help="explain why two runs differ (exit 0 same, 1 differ, 2 error)")
    p.add_argument("a", metavar="A", help="run id, runs:/<id>, run name (with -e) or JSON file")
    p.add_argument(
        "b",
        metavar="B",
        nargs="?",
        help="the run to compare A with (left out: A is compared with the latest earlier "
        "finished run of its experiment)",
    )
    _tracking(p)
    _output(p, ("text", "json", "markdown", "html"))
    p.add_argument("--all", action="store_true", help="also list differences with no effect")
    p.add_argument(
        "--atol", type=float, default=0.0, help="absolute tolerance per step (default 0)"
    )
    p.add_argument(
        "--rtol", type=float, default=0.0, help="relative tolerance per step (default 0)"
    )
    p.add_argument(
        "--metric", action="append", metavar="NAME", help="compare only this metric (repeatable)"
    )
    p.add_argument("--log-to", metavar="RUN", help="store the report as an artifact of RUN")

    p = sub.add_parser(
        "rerun",
        help="run a recorded training again here; exit 0 reproduced, 1 not, 2 error",
        description="Run RUN's training again on this machine: its commit with its recorded "
        "diff applied in a temporary worktree (unless this working tree already matches), with "
        "its command line, as a new run tagged fingerprint.rerun_of; then say whether the "
        "curves are equal, bit for bit. Run it inside a clone of RUN's repository.",
    )
    p.add_argument("run", metavar="RUN", help="run id, runs:/<id> or run name (with -e)")
    p.add_argument(
        "--set",
        action="append",
        metavar="FIELD=VALUE",
        help="force a setting (seeds.requested=0, determinism.deterministic_algorithms=true, "
        "torch.threads.intra_op=1, data.num_workers=0, ...) or an option "
        "(program.options.lr=0.1); repeatable",
    )
    _rerun_options(p)
    _tracking(p)
    _output(p, ("text", "json"))

    p = sub.add_parser(
        "bisect",
        help="prove which difference turns A's curve into B's (exit 0 proven, 1 not, 2 error)",
        description="Rerun A with B's settable values (seed, flags, threads, workers, options, "
        "files of code) in halving groups until the smallest set that turns A's curve into B's "
        "is found. Differences no rerun can set (GPU, driver, CUDA, torch, packages) are listed, "
        "never claimed. Run it inside a clone of the runs' repository.",
    )
    p.add_argument("a", metavar="A", help="the run rerun here (run id, runs:/<id>, name with -e)")
    p.add_argument("b", metavar="B", help="the run whose curve A's reruns aim at")
    p.add_argument(
        "--jobs",
        "-j",
        type=int,
        metavar="N",
        help="run up to N independent reruns at the same time, the splits chosen for rounds "
        "(default: what the executor can hold; locally, the free cores)",
    )
    _rerun_options(p)
    _tracking(p)
    _output(p, ("text", "json", "markdown", "html"))

    p = sub.add_parser(
        "explain",
        help="which recorded differences account for a metric's spread across an experiment",
        description="Explain the spread of a metric across an experiment's runs: how much is "
        "noise (runs equal but for their seeds), which recorded fields (options, params, code, "
        "seeds, packages, torch, CUDA, GPU...) account for the rest, with an interval, which "
        "moved together and cannot be separated, and which runs lie outside their replicates.",
    )
    p.add_argument("experiment", metavar="EXPERIMENT", help="experiment name or id")
    p.add_argument(
        "--metric",
        metavar="NAME",
        help="the metric to explain (default: the summary metric most runs share)",
    )
    p.add_argument(
        "--at",
        default="final",
        metavar="final|STEP",
        help="each run's last value (final, the default) or its value at step STEP",
    )
    p.add_argument(
        "--filter",
        metavar="EXPR",
        help="only the runs this MLflow search filter matches, e.g. \"params.lr = '0.1'\"",
    )
    p.add_argument(
        "--include-unfinished",
        action="store_true",
        help="also explain FAILED, KILLED and RUNNING runs (left out and listed by default)",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress line on stderr while the runs are read (shown on a terminal after 2 s)",
    )
    p.add_argument(
        "--tracking-uri",
        metavar="URI",
        help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else MLflow's default)",
    )
    _output(p, ("text", "json", "markdown", "html"))
    p.add_argument(
        "--log-to",
        metavar="RUN",
        help="store the report as an artifact of RUN (a run id, or a run name of EXPERIMENT)",
    )

    p = sub.add_parser(
        "audit", help="what in a recorded run, or in this environment, threatens reproducibility"
    )
    p.add_argument(
        "run",
        metavar="RUN",
        nargs="?",
        help="a run id, runs:/<id>, run name (with -e) or fingerprint JSON file; without it, "
        "this environment",
    )
    _output(p, ("text", "json"))
    _tracking(p)

    p = sub.add_parser("find", help="runs with the same fingerprint, by server-side tag search")
    p.add_argument("run", metavar="RUN", help="the run whose twins to find")
    p.add_argument(
        "--same",
        choices=("all", "env", "numerics", "recipe"),
        default="all",
        help="which hash must match (default: all, the whole fingerprint)",
    )
    p.add_argument("--max-results", type=int, default=100, metavar="N")
    _tracking(p)
    _output(p, ("text", "json"))

    p = sub.add_parser(
        "sync",
        help="upload runs spooled while the tracking server was unreachable",
        description="Upload runs spooled while the tracking server was unreachable, each to the "
        "tracking URI it was logging to. A run whose process died without ending it is ended as "
        "KILLED; one whose process may still be alive is left RUNNING.",
    )
    p.add_argument(
        "--tracking-uri",
        metavar="URI",
        help="upload every spooled run to URI instead of the URI it was logging to (e.g. the "
        "server moved); default: each run's own, else $MLFLOW_TRACKING_URI, else MLflow's default",
    )
    p.add_argument("--spool-dir", metavar="DIR", help="spool directory (default: the standard one)")
    p.add_argument("--dry-run", action="store_true", help="list what would be uploaded")
    p.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="stop after this long in all, keeping what is left for the next sync (default 300); "
        "one request waits at most $MLFLOW_FINGERPRINT_REQUEST_TIMEOUT (default 5 s)",
    )
    return parser


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def check_numbers(args: argparse.Namespace) -> None:
    """Every numeric option in its range (``limits``), before any work: argparse takes ``nan``,
    ``inf`` and ``-1`` for a float and any size of integer. One ``UsageError`` line otherwise."""
    from .. import limits
    from ..errors import UsageError

    checks = {
        "atol": ("--atol", limits.check_tolerance),
        "rtol": ("--rtol", limits.check_tolerance),
        "timeout": ("--timeout", limits.check_seconds),
        "until_step": ("--until-step", limits.check_step),
        "max_results": (
            "--max-results",
            lambda flag, n: limits.check_count(flag, n, 1, limits.MAX_RESULTS),
        ),
        "jobs": ("--jobs", lambda flag, n: limits.check_count(flag, n, 1, limits.MAX_JOBS)),
    }
    for attribute, (flag, check) in checks.items():
        value = getattr(args, attribute, None)
        if value is None:
            continue
        try:
            check(flag, value)
        except ValueError as exc:
            raise UsageError(str(exc)) from None


@contextlib.contextmanager
def _one_line_warnings(command: str) -> Iterator[None]:
    """The package's own warnings as one line each, like its errors: Python's format adds the
    source line that happened to warn. A bad ``MLFLOW_FINGERPRINT_*`` value is said first,
    before anything reads the settings: not through the hook below, which another thread's
    ``catch_warnings`` may put back to Python's while the command runs."""
    from ..errors import FingerprintWarning
    from ..settings import unsaid_warnings

    for message in unsaid_warnings():
        _say_warning(command, message, sys.stderr)
    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: TextIO | None = None,
            line: str | None = None,
        ) -> None:
            if not issubclass(category, FingerprintWarning):
                shown(message, category, filename, lineno, file, line)
                return
            _say_warning(command, str(message), file or sys.stderr)

        warnings.showwarning = show
        yield


def _say_warning(command: str, message: str, file: TextIO) -> None:
    """One line, redacted. Not with the environment's secrets: reading them reads the settings,
    whose warning this may be (it would be said again, from inside its own saying)."""
    from ..present.escape import one_line
    from ..redact import redact_text

    text = redact_text(message).removeprefix("mlflow-fingerprint: ")
    print(f"fingerprint {command}: warning: {one_line(text)}", file=file)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return EXIT_BAD_INPUT
    module_name, func_name = HANDLERS[args.command].split(":")
    with _one_line_warnings(args.command):
        return _run(args, module_name, func_name)


def _run(args: argparse.Namespace, module_name: str, func_name: str) -> int:
    """The command's handler, every failure of it one line."""
    credentials = {name: os.environ.get(name) for name in CREDENTIALS}
    try:
        check_numbers(args)
        module = importlib.import_module(f"{__package__}.{module_name}")
        return int(getattr(module, func_name)(args) or 0)
    except KeyboardInterrupt as exc:
        from ..errors import Terminated

        if isinstance(exc, Terminated):  # SIGTERM/SIGHUP, let in only while a rerun runs
            print(f"fingerprint: ended by {exc.name}", file=sys.stderr)
            return 128 + exc.signum
        print("fingerprint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # every failure is one line, never a traceback
        from ..errors import UsageError
        from ..model.fingerprint import FingerprintError

        if isinstance(exc, UsageError | FingerprintError):
            message = _first_line(exc)
        else:
            message = f"{type(exc).__name__}: {_first_line(exc)}"
        from ..present.escape import one_line
        from ..redact import redact_text, secret_env_values
        from ..settings import DEBUG

        message = redact_text(message, secret_env_values())  # an error must not leak either
        print(f"fingerprint {args.command}: error: {one_line(message)}", file=sys.stderr)
        if os.environ.get(DEBUG):
            raise
        return EXIT_BAD_INPUT
    finally:  # a URI's credentials were handed to MLflow through these: not left to a caller
        for name, before in credentials.items():
            if before is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = before


def entry() -> None:
    """The ``fingerprint`` process: its collector held off (``collector``)."""
    from .collector import held_off

    with held_off():
        code = main()
    sys.exit(code)
