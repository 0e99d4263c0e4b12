"""Environments holding another run's versions of some packages, for a rerun to train in.

A bisect that finds ``numpy 1.26.4`` in A and ``2.1.0`` in B can rerun A with B's numpy: an
environment is built with uv (which the set-up already uses) for this very interpreter, holding
the asked versions and, behind them, everything of the environment this process runs in (a
``.pth`` line adds its site-packages after the new one's). Only the differing packages are
installed (``--no-deps``: B's versions of their dependencies are differences of their own), so a
build takes seconds, not the minutes of a whole environment.

Each set of versions is built once, in a folder named by its content (the interpreter, the
versions and the package indexes), and reused by every rerun and every later bisect that asks
for it. A build goes into a temporary folder renamed into place only once uv succeeded: a failed
build (a version the index lacks) leaves nothing behind, and is one line.

Packages come only from where pip's configuration says (``PIP_INDEX_URL``, ``PIP_FIND_LINKS``,
``--no-index``, pip's configuration files: ``scripts/install.py`` hands uv the same); uv's own
default, PyPI, only where pip's would be too.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .. import settings
from ..capture.packages import installed_distributions
from ..environment import environ_copy
from ..errors import BuildFailed
from ..model.hashing import digest
from ..redact import redact_text

# A build's time bound: a download of a large wheel on a slow link, not a stuck resolver.
BUILD_TIMEOUT_S = 900.0
# pip's options that say where packages come from, as uv spells them.
INDEX_OPTIONS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
}
OVERLAY = "_mfp_base.pth"


def _pip_files(env: Mapping[str, str]) -> list[Path]:
    """pip's configuration files, weakest first (pip's own order); none where
    ``PIP_CONFIG_FILE`` is ``os.devnull``, as pip reads none then."""
    if env.get("PIP_CONFIG_FILE") == os.devnull:
        return []
    home = Path.home()
    xdg = env.get("XDG_CONFIG_HOME") or str(home / ".config")
    dirs = (env.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(os.pathsep)
    files = [Path(d) / "pip" / "pip.conf" for d in dirs] + [Path("/etc/pip.conf")]
    files += [home / ".pip" / "pip.conf", Path(xdg) / "pip" / "pip.conf"]
    files.append(Path(sys.prefix) / "pip.conf")
    if env.get("PIP_CONFIG_FILE"):
        files.append(Path(env["PIP_CONFIG_FILE"]))
    return files


def index_options(environ: Mapping[str, str] | None = None) -> list[str]:
    """uv's options for where pip's configuration takes packages from: its files' ``global``
    and ``install`` sections, then ``PIP_*`` variables (the strongest), as pip reads them."""
    env = environ_copy() if environ is None else environ
    found: dict[str, str] = {}
    for path in _pip_files(env):
        parser = configparser.RawConfigParser()
        try:
            parser.read(path)
        except (configparser.Error, OSError):
            continue
        for section in ("global", "install"):
            if parser.has_section(section):
                found.update(
                    {k: v for k, v in parser.items(section) if k in (*INDEX_OPTIONS, "no-index")}
                )
    for option in (*INDEX_OPTIONS, "no-index"):
        value = env.get("PIP_" + option.upper().replace("-", "_"))
        if value is not None:
            found[option] = value
    out: list[str] = []
    if found.get("no-index", "").strip().lower() in ("1", "true", "yes", "on"):
        out.append("--no-index")
    for option, flag in INDEX_OPTIONS.items():
        for value in found.get(option, "").split():
            out += [flag, value]
    return out


def uv_command() -> str | None:
    """The uv beside this interpreter (the set-up installs it there), else on PATH."""
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.is_file() else shutil.which("uv")


def size_mib(path: Path) -> float:
    total = sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    return round(total / 2**20, 1)


@dataclass
class Environments:
    """The environments one bisect builds, by content; each built once."""

    root: Path = field(default_factory=settings.env_cache_root)
    indexes: list[str] = field(default_factory=index_options)
    failed: dict[str, str] = field(default_factory=dict)
    here: Mapping[str, str] = field(default_factory=installed_distributions)

    def missing(self, versions: Mapping[str, str]) -> dict[str, str]:
        """What of ``versions`` this environment does not hold as it is."""
        return {n: v for n, v in sorted(versions.items()) if self.here.get(n) != v}

    def key(self, versions: Mapping[str, str]) -> str:
        """The folder name of an environment: this interpreter, the versions, the indexes."""
        return digest([sys.executable, sys.version, sorted(versions.items()), self.indexes])

    def path_of(self, versions: Mapping[str, str]) -> Path:
        return self.root / self.key(self.missing(versions))

    def built(self, versions: Mapping[str, str]) -> Path | None:
        """The environment's folder where it was built before (a later bisect's included)."""
        path = self.path_of(versions)
        return path if (path / "bin" / "python").exists() else None

    def python_for(self, versions: Mapping[str, str]) -> str:
        """The interpreter of an environment with ``versions`` in front of this one's packages;
        built where it is not yet; this interpreter where it holds them all. ``BuildFailed`` in
        one line where it cannot be."""
        versions = self.missing(versions)
        if not versions:
            return sys.executable
        done = self.built(versions)
        if done is not None:
            return str(done / "bin" / "python")
        key = self.key(versions)
        if key in self.failed:
            raise BuildFailed(self.failed[key])
        try:
            path = self._build(versions)
        except BuildFailed as exc:
            self.failed[key] = str(exc)
            raise
        return str(path / "bin" / "python")

    def _build(self, versions: Mapping[str, str]) -> Path:
        uv = uv_command()
        if uv is None:
            raise BuildFailed("uv is not installed here, and it builds the environment")
        self.root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".building-", dir=self.root))
        try:
            _uv(uv, "venv", "--quiet", "--python", sys.executable, str(staging / "env"))
            site = Path(sysconfig.get_path("purelib", vars={"base": str(staging / "env")}))
            here = sysconfig.get_path("purelib")
            # Everything of this environment behind the new packages, its .pth files included
            # (the package itself may be an editable install).
            (site / OVERLAY).write_text(f"import site; site.addsitedir({here!r})\n")
            wanted = [f"{name}=={version}" for name, version in sorted(versions.items())]
            _uv(
                uv,
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--python",
                str(staging / "env" / "bin" / "python"),
                *self.indexes,
                *wanted,
            )
            target = self.path_of(versions)
            try:
                (staging / "env").rename(target)
            except OSError:  # another bisect built it meanwhile
                if self.built(versions) is None:
                    raise
            return target
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _uv(uv: str, *args: str) -> None:
    env = environ_copy()
    for name in [n for n in env if n.startswith("UV_")]:  # pip's configuration says, not uv's
        del env[name]
    env.pop("VIRTUAL_ENV", None)
    try:
        done = subprocess.run(
            [uv, *args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise BuildFailed(f"uv ran past {BUILD_TIMEOUT_S:g} s") from None
    except OSError as exc:
        raise BuildFailed(f"uv could not start: {exc}") from None
    if done.returncode:
        lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
        reason = next((ln for ln in lines if "because" in ln.lower()), None)
        reason = reason or (lines[-1] if lines else f"uv exited with status {done.returncode}")
        raise BuildFailed(redact_text(reason.removeprefix("╰─▶ ").removeprefix("× "))[:300])
