"""Install requirements into the venv this script runs in: with uv where it can, else with pip.

Why: ``make setup`` resolves and installs some 170 distributions, torch and TensorFlow among them.
pip downloads, unpacks and byte-compiles them one at a time: 215-222 s into a fresh venv from empty
caches on a 2-core machine, a sixth of CI. uv (https://docs.astral.sh/uv/pip/) does the same in
parallel in 59-86 s (``benchmarks/bench_setup.py``). Both install the same pinned versions
(``constraints.txt``); ``tests/unit/test_setup.py`` checks what the tests run on against the pins.

uv does not read pip's configuration, and a machine's pip configuration may say where packages
come from: a folder of wheels (``find-links``), a mirror (``index-url``), a constraint file, a
certificate. This script reads it with pip itself (``pip config list``, where ``PIP_*`` variables
show as ``:env:``) and hands each setting to uv in uv's words. A setting it does not know how to
hand over, a uv that cannot be installed, or a uv install that fails: pip installs instead, as
before, and one line says why.

``python scripts/install.py [--uv SPEC] [--constraint FILE] [--lazy-bytecode] -- REQUIREMENT...``:
SPEC is the uv to install (``uv==0.13.9``), empty for pip alone; the requirements are pip's (``-e
".[dev]"``). ``--lazy-bytecode`` compiles nothing as it installs (``make setup BYTECODE=lazy``):
of the some 28,000 modules installed, a process of the tests imports at most 8,000, and compiling
them all took 94 CPU-seconds of CI's set-up, where what is imported compiles in about 30 once.
Standard library only: it runs in a venv that holds nothing else yet.
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# pip's sections, weakest first: an option set in a later one wins (pip's own order).
SECTIONS = ("global", "install", ":env:")
# pip settings that change only how pip talks or prints, not what it installs.
HARMLESS = frozenset(
    {
        "disable-pip-version-check",
        "quiet",
        "verbose",
        "progress-bar",
        "no-color",
        "root-user-action",
        "cache-dir",
        "no-cache-dir",
        "retries",
        "no-input",
        "break-system-packages",
    }
)


@dataclass(frozen=True)
class UvPlan:
    """uv's arguments and environment that say what pip's configuration says."""

    args: tuple[str, ...]
    env: Mapping[str, str]


def pip_config(listing: str) -> dict[str, str]:
    """``pip config list`` output (``section.key='value'`` lines) as option -> value, each option
    taken from the strongest section that sets it."""
    found: dict[str, tuple[int, str]] = {}
    for line in listing.splitlines():
        key, sep, raw = line.partition("=")
        section, dot, option = key.rpartition(".")
        if not sep or not dot or section not in SECTIONS:
            continue
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw
        rank = SECTIONS.index(section)
        if option not in found or found[option][0] <= rank:
            found[option] = (rank, str(value))
    return {option: value for option, (_, value) in found.items()}


def present(location: str) -> bool:
    """Whether a find-links or index location can be read: a local folder or file that exists,
    or any remote URL (pip warns about a missing local one and goes on; uv would stop)."""
    parsed = urllib.parse.urlparse(location)
    if parsed.scheme in ("http", "https"):
        return True
    path = urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else location
    return Path(path).exists()


def uv_plan(config: Mapping[str, str]) -> UvPlan | str:
    """What uv needs to install from where pip would, or why it cannot be told (a string). The
    indexes go in uv's environment, not on its command line: a mirror's URL may carry a token,
    which must be neither printed nor shown to other users' ``ps``."""
    args: list[str] = ["--index-strategy", "unsafe-best-match"]  # pip's choice across indexes
    env: dict[str, str] = {}
    for option, value in config.items():
        words = value.split()
        if option == "index-url":
            env["UV_DEFAULT_INDEX"] = value
        elif option == "extra-index-url":
            readable = [w for w in words if present(w)]
            if readable:
                env["UV_INDEX"] = " ".join(readable)
        elif option == "find-links":
            for place in (w for w in words if present(w)):
                args += ["--find-links", place]
        elif option == "constraint":
            for path in (w for w in words if present(w)):
                args += ["--constraint", path]
        elif option == "no-index":
            if value.lower() in ("1", "true", "yes", "on"):
                args.append("--no-index")
        elif option == "trusted-host":
            for host in words:
                args += ["--allow-insecure-host", host]
        elif option == "cert":
            env["SSL_CERT_FILE"] = value
        elif option in ("timeout", "default-timeout"):
            env["UV_HTTP_TIMEOUT"] = value
        elif option == "proxy":
            env["HTTPS_PROXY"] = env["HTTP_PROXY"] = value
        elif option not in HARMLESS:
            return f"pip's setting {option!r} has no uv counterpart here"
    return UvPlan(tuple(args), env)


def run(command: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    """``command``'s exit status, its output passed through."""
    return subprocess.run(list(command), env={**os.environ, **(env or {})}).returncode


def uv_command(python: str, plan: UvPlan, arguments: Sequence[str], compile_all: bool) -> list[str]:
    """uv's install command for ``python``'s venv: ``plan``'s settings, then ``arguments``
    (constraints and requirements); every module byte-compiled unless ``compile_all`` is off."""
    uv = Path(python).parent / "uv"
    command = [str(uv), "pip", "install", "--quiet", "--python", python]
    command += ["--compile-bytecode"] if compile_all else []
    return [*command, *plan.args, *arguments]


def with_uv(
    spec: str, constraints: Sequence[str], requirements: Sequence[str], compile_all: bool = True
) -> str | None:
    """Install with uv; ``None`` when done, else why pip must."""
    python = sys.executable
    if run([python, "-m", "pip", "install", "--quiet", *constraints, spec]) != 0:
        return f"{spec} could not be installed"
    listing = subprocess.run(
        [python, "-m", "pip", "config", "list"], capture_output=True, text=True
    )
    if listing.returncode != 0:
        return "pip config list failed"
    plan = uv_plan(pip_config(listing.stdout))
    if isinstance(plan, str):
        return plan
    command = uv_command(python, plan, [*constraints, *requirements], compile_all)
    # One short line (a terminal of 100 columns shows it whole): the full command is the
    # plan's, with pip's index settings in it, hundreds of characters long.
    print(f"install (uv): {' '.join(requirements)}", flush=True)
    if run(command, plan.env) != 0:
        return "uv's install failed"
    return None


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uv", default="", help="the uv to install (empty: pip alone)")
    parser.add_argument("--constraint", default="", help="a constraints file for both")
    parser.add_argument(
        "--lazy-bytecode", action="store_true", help="compile no module as it is installed"
    )
    parser.add_argument("requirements", nargs="+", help="pip's requirement arguments")
    options = parser.parse_args(argv)
    constraints = ["--constraint", options.constraint] if options.constraint else []
    if options.uv:
        why = with_uv(options.uv, constraints, options.requirements, not options.lazy_bytecode)
        if why is None:
            return 0
        print(f"install: {why}; pip installs instead", file=sys.stderr, flush=True)
    pip = [sys.executable, "-m", "pip", "install", "--quiet", *constraints]
    pip += ["--no-compile"] if options.lazy_bytecode else []
    return run([*pip, *options.requirements])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
