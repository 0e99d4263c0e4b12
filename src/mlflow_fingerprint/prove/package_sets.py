"""Which of B's package versions a bisect can give a rerun here, settled before any rerun.

A package set is built (``environments``) for this interpreter from the indexes pip's
configuration names. What cannot be built here is ``cannot_set`` with its reason in one line,
and the rest is searched as before: a CUDA build of a package on a machine without the NVIDIA
driver, a version the indexes do not have (found by building, all at once first and, where that
fails, each alone), a package B has and A's rerun would have to lose (an environment can add to
this one, not take away). Where A's own versions are not this environment's, every rerun starts
from an environment with A's versions (the baseline included): A as recorded.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..compare.settable import INTERPRETER, VERSION, Knob
from ..errors import BuildFailed
from ..model.fields import PACKAGES_DISTRIBUTIONS
from ..model.fingerprint import get_path
from .environments import Environments, size_mib
from .pair import Setup


@dataclass(frozen=True)
class PackageSets:
    """What a bisect's reruns start from and what of B's packages it cannot set (one line each)."""

    setup: Setup
    base: Mapping[str, str]  # A's versions this environment does not hold
    reasons: tuple[str, ...]


def recorded_packages(record: Mapping[str, Any]) -> dict[str, str]:
    """A record's distributions, name -> version, as far as they are versions an index has."""
    listed = get_path(record, PACKAGES_DISTRIBUTIONS)
    if not isinstance(listed, Mapping):
        return {}
    return {str(n): v for n, v in listed.items() if isinstance(v, str) and VERSION.fullmatch(v)}


def has_driver() -> bool:
    return Path("/proc/driver/nvidia").exists() or shutil.which("nvidia-smi") is not None


def _unbuildable(k: Knob) -> str | None:
    if "+cu" in str(k.b) and not has_driver():
        return f"{k.key} {k.b} is a CUDA build, and this machine has no NVIDIA driver"
    return None


def settle(s: Setup, envs: Environments, build: bool = True) -> PackageSets:
    """The setup with B's packages that cannot be built here moved to what cannot be set.
    ``build``: find out by building (a dry run builds nothing and says what it would build)."""
    packages = [k for k in s.sides.knobs if k.kind == "package"]
    base = envs.missing(recorded_packages(s.a.record))
    refused: dict[str, str] = {}
    for k in packages:
        why = _unbuildable(k)
        if why is not None:
            refused[k.field] = why
    left = [k for k in packages if k.field not in refused]
    if build and (left or base):
        try:
            envs.python_for({**base, **{k.key: str(k.b) for k in left}})
        except BuildFailed as everything:
            if base:  # A's own set: without it no rerun stands for A
                try:
                    envs.python_for(base)
                except BuildFailed as exc:
                    raise BuildFailed(
                        f"A's packages cannot be built here, so no rerun stands for A: {exc}"
                    ) from None
            alone = len(refused)
            for k in left:
                try:
                    envs.python_for({**base, k.key: str(k.b)})
                except BuildFailed as exc:
                    refused[k.field] = f"{k.key} {k.b}: {exc}"
            if len(refused) == alone:  # each builds alone, not all together
                refused.update({k.field: f"B's packages together: {everything}" for k in left})
    reasons = [*_other_interpreter(s), *(f"cannot build {why}" for why in refused.values())]
    return _without(s, base, refused, reasons)


def _other_interpreter(s: Setup) -> list[str]:
    """Why none of B's package versions is built where B ran another Python (``settable`` has
    listed them as what cannot be set): an environment is built for this interpreter only."""
    return [
        f"cannot set {d.field} ({d.a} vs {d.b}): reruns run on this interpreter, so none of "
        "B's package versions is built for B's"
        for d in s.differences
        if d.field in INTERPRETER
    ]


def _without(
    s: Setup, base: Mapping[str, str], refused: Mapping[str, str], reasons: list[str]
) -> PackageSets:
    sides = s.sides
    cannot = [d for d in s.differences if d.field in refused]
    sides = replace(
        sides,
        knobs=tuple(k for k in sides.knobs if k.field not in refused),
        cannot_set=(*sides.cannot_set, *cannot),
    )
    return PackageSets(replace(s, sides=sides), dict(base), tuple(dict.fromkeys(reasons)))


def would_build(s: Setup, envs: Environments) -> list[str]:
    """What a dry run says of the environments a bisect would build: each set, its size where
    it is built already."""
    base = envs.missing(recorded_packages(s.a.record))
    every = {**base, **{k.key: str(k.b) for k in s.sides.knobs if k.kind == "package"}}
    out = []
    for what, versions in (("A's packages", base), ("A's with every package of B's", every)):
        if not envs.missing(versions) or (what != "A's packages" and versions == base):
            continue
        shown = ", ".join(f"{n}=={v}" for n, v in envs.missing(versions).items())
        built = envs.built(versions)
        size = f"built, {size_mib(built)} MiB" if built else "not built yet"
        out.append(f"environment for {what}: {shown} ({size}; {envs.path_of(versions)})")
    return out
