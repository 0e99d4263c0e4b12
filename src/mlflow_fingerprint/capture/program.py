"""The recipe a user changes without touching git: the command line, the script that ran, the
project's own Python files the process imported, and the training function's arguments.

A different ``--lr``, an untracked copy of the script with one line changed, or a helper module
edited but not committed leave the git record as it was; these fields are what tells such runs
apart (docs/design.md, "The recipe"). Everything here is read from the interpreter and the files it
imported, without a subprocess: which of them git tracks is in the git probe's status.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from ..model.fingerprint import unavailable
from ..redact import MASK, redact_text, secret_env_values, secret_name
from ..stored_files import read_regular
from .context import ProbeContext
from .reading import first_line
from .store_files import store_paths
from .variables import probe_variables

EntryKind = Literal["script", "module", "interactive"]

# Bounds: a capture must stay cheap whatever the project imports.
MAX_SOURCES = 400
MAX_SOURCE_BYTES = 2 * 1024 * 1024  # a larger "source" is data, not code; it is not hashed
DIGEST_LENGTH = 16

# (path, mtime_ns, size) -> sha256: a file hashed once per process unless it changes.
_HASHES: dict[tuple[str, int, int], str] = {}
# (module count, roots) -> the project's files among the imported modules.
_FILES: dict[tuple[int, tuple[Path, ...]], tuple[Path, ...]] = {}
_NO_DICT: dict[str, Any] = {}  # what a module without a ``__dict__`` is read as


def file_sha256(path: Path) -> str | None:
    """The content digest of ``path``; None where it cannot be read, is too large to be code or
    is no regular file (a record names the files a rerun compares: a FIFO would hold it)."""
    try:
        stat = path.stat()
        if stat.st_size > MAX_SOURCE_BYTES:
            return None
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        if key not in _HASHES:
            data = read_regular(path, limit_bytes=MAX_SOURCE_BYTES, timeout_s=None)
            _HASHES[key] = hashlib.sha256(data).hexdigest()[:DIGEST_LENGTH]
        return _HASHES[key]
    except OSError:
        return None


def repo_root(start: Path) -> Path | None:
    """The nearest directory above ``start`` holding ``.git`` (a directory, or a worktree's file);
    read from the file system so that no git process is needed."""
    for path in (start, *start.parents):
        if (path / ".git").exists():
            return path
    return None


def redact_option(name: str | None, value: str, secrets: set[str]) -> str:
    """The value of option (or argument) ``name`` as it may be stored or shown: masked whole
    where the name says it is secret, else with what looks like a secret masked. The one rule for
    a command line's options and for the options a rerun is given (``--set``)."""
    if name is not None and secret_name(name):
        return MASK
    return redact_text(value, secrets)


def redact_argv(argv: Sequence[str], secrets: set[str]) -> list[str]:
    """argv with secrets masked: values of options named like secrets (``--api-key X``,
    ``--token=X``), URL credentials, token-shaped strings and secret environment values."""
    out: list[str] = []
    secret_option = False
    for arg in argv:
        if secret_option and not arg.startswith("-"):
            out.append(MASK)
            secret_option = False
            continue
        secret_option = False
        if arg.startswith("-") and "=" in arg:
            name, value = arg.split("=", 1)
            out.append(f"{name}={redact_option(name, value, secrets)}")
        elif arg.startswith("-"):
            secret_option = secret_name(arg)
            out.append(arg)
        else:
            out.append(redact_text(arg, secrets))
    return out


def parse_options(args: Sequence[str]) -> dict[str, Any] | None:
    """``--name value``, ``--name=value`` and bare ``--flag`` (True) as a mapping keyed by the
    option without dashes; positional arguments before the first option are kept under ``_``.
    None where the command line does not have that shape (a value with no option before it)."""
    options: dict[str, Any] = {}
    positional: list[str] = []
    name: str | None = None
    for arg in args:
        if arg.startswith("--") and len(arg) > 2:
            if name is not None:
                options[name] = True
            key, eq, value = arg[2:].partition("=")
            if eq:
                options[key] = value
                name = None
            else:
                name = key
        elif arg.startswith("-") and len(arg) == 2 and not arg[1].isdigit():
            if name is not None:
                options[name] = True
            name = arg[1:]
        elif name is not None:
            options[name] = arg
            name = None
        elif not options:
            positional.append(arg)
        else:
            return None
    if name is not None:
        options[name] = True
    if positional:
        options["_"] = positional
    return options


def _main_module() -> Any:
    return sys.modules.get("__main__")


def _relative(path: Path, root: Path | None) -> str:
    """``path`` relative to the repository root, else absolute."""
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return str(path)


def entry_point(root: Path | None) -> tuple[dict[str, Any], Path | None]:
    """(``program.entry``, the file that ran or None). A ``python -m pkg.mod`` run is a module
    (``__main__.__spec__`` names it); a file run is a script; ``-c``, a notebook or a REPL is
    interactive (no file to hash)."""
    main = _main_module()
    spec = getattr(main, "__spec__", None)
    module = getattr(spec, "name", None)
    file = getattr(main, "__file__", None)
    kind: EntryKind
    if spec is not None and module not in (None, "__main__"):
        kind = "module"
    elif isinstance(file, str) and file:
        kind = "script"
    else:
        return {"kind": "interactive", "path": None, "sha256": None}, None
    if not isinstance(file, str):
        return {"kind": kind, "module": module, "path": None, "sha256": None}, None
    path = Path(file).resolve()
    entry: dict[str, Any] = {"kind": kind, "path": _relative(path, root), "sha256": None}
    if kind == "module":
        entry["module"] = module
    entry["sha256"] = file_sha256(path)
    return entry, path


def _prefixes(dirs: Iterable[Path | str]) -> tuple[str, ...]:
    return tuple(os.path.join(os.path.abspath(d), "") for d in dirs)


def _excluded_dirs() -> tuple[str, ...]:
    """Where installed code lives: the interpreter's prefixes and this package."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return _prefixes([*(p for p in prefixes if p), Path(__file__).resolve().parents[1]])


def _is_under(path: Path, dirs: Sequence[Path]) -> bool:
    return str(path).startswith(_prefixes(dirs))


def project_files(roots: Sequence[Path]) -> list[Path]:
    """The ``.py`` files of imported modules under ``roots``, installed code left out; walked
    again only when the number of modules changed (a run captures several times)."""
    key = (len(sys.modules), tuple(roots))
    if key not in _FILES:
        _FILES.clear()
        _FILES[key] = _walk_modules(roots)
    return list(_FILES[key])


def _walk_modules(roots: Sequence[Path]) -> tuple[Path, ...]:
    """String prefixes, not Path objects: a process with torch holds thousands of modules, and
    the first capture of a process pays for the whole walk. One comprehension drops installed
    code first, by its prefix as written: one ``startswith`` rejects nearly every module. (So a
    path that starts in the interpreter's prefix and climbs out of it with ``..`` is not
    followed out.)"""
    inside, excluded = _prefixes(roots), _excluded_dirs()
    # The module's own dict: getattr would run a lazy module's __getattr__ (and import).
    # A relative __file__ is a placeholder (torch's ``_ops.py``), not a file read from here.
    files = [
        file
        for module in list(sys.modules.values())
        if isinstance(file := getattr(module, "__dict__", _NO_DICT).get("__file__"), str)
        and not file.startswith(excluded)
        and file.endswith(".py")
        and file.startswith("/")
    ]
    found: set[str] = set()
    for file in files:
        # Normalised only where it changes something: over thousands of modules, normpath
        # was most of the walk's cost, and nearly every path is already normal.
        abnormal = "/./" in file or "/../" in file or "//" in file
        path = os.path.normpath(file) if abnormal else file
        installed = "site-packages" in path or "dist-packages" in path
        if path.startswith(inside) and not path.startswith(excluded) and not installed:
            found.add(path)
    return tuple(Path(p) for p in sorted(found))


def sources(root: Path | None, cwd: Path, entry: Path | None) -> dict[str, Any]:
    """``program.sources``: {path: sha256} of the project's imported files, with a digest of the
    set. Which of them git tracks is read at diff time from ``git.untracked_files``."""
    roots = [r for r in dict.fromkeys([root, cwd.resolve()]) if r is not None]
    paths = project_files(roots)
    if entry is not None and entry not in paths and _is_under(entry, roots):
        paths.append(entry)
    store = _prefixes(store_paths(cwd))  # code kept in the artifact root or the spool
    paths = [p for p in paths if not str(p).startswith(store)]
    truncated = len(paths) > MAX_SOURCES
    files = {_relative(p, root or cwd.resolve()): file_sha256(p) for p in paths[:MAX_SOURCES]}
    section: dict[str, Any] = {
        "files": files,
        "digest": hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:DIGEST_LENGTH],
        "count": len(paths),
    }
    if truncated:
        section["truncated_at"] = MAX_SOURCES
    return section


def call_arguments(func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The scalar arguments of ``func(*args, **kwargs)`` by parameter name, defaults included
    (a default changed in the code is a recipe change too); {} where the call cannot be bound."""
    import inspect

    try:
        bound = inspect.signature(func).bind_partial(*args, **kwargs)
        bound.apply_defaults()
    except (TypeError, ValueError):
        return {}
    return {
        name: value
        for name, value in bound.arguments.items()
        if value is None or isinstance(value, bool | int | float | str)
    }


def scalar_call(
    values: Mapping[str, Any], secrets: set[str], keep_lists: bool = False
) -> dict[str, Any]:
    """The arguments that are scalars (and, with ``keep_lists``, lists of them), strings
    redacted, a secret-named one masked whatever its type; everything else is left out."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if value is not None and secret_name(name):
            out[name] = MASK
        elif value is None or isinstance(value, bool | int | float):
            out[name] = value
        elif isinstance(value, str):
            out[name] = redact_option(name, value, secrets)
        elif keep_lists and isinstance(value, list):
            out[name] = [
                redact_option(None, v, secrets) if isinstance(v, str) else v for v in value
            ]
    return out


def program_options(found: Any, argv: Sequence[str], secrets: set[str]) -> tuple[Any, str]:
    """``program.options`` and where they were read: the program's own values with their
    defaults where ``capture/options.py`` found them, else the (redacted) command line parsed."""
    if found is not None:
        return scalar_call(dict(found.values), secrets, keep_lists=True), found.source
    parsed = parse_options(argv[1:])
    if parsed is None:
        return unavailable("the command line is not --name value pairs"), "argv"
    return parsed, "argv"


def probe(ctx: ProbeContext) -> dict[str, Any]:
    secrets = secret_env_values()
    argv = redact_argv(list(sys.argv), secrets)
    root = repo_root(ctx.cwd.resolve())
    entry, entry_path = entry_point(root)
    if root is None and entry_path is not None:
        root = repo_root(entry_path.parent)
        entry["path"] = _relative(entry_path, root)
    if entry["kind"] == "module" and entry["path"] and Path(entry["path"]).is_absolute():
        entry["path"] = None  # an installed module: its name and content say which, not where
    if entry_path is not None and argv and Path(argv[0]).resolve() == entry_path:
        argv[0] = entry["path"]  # the same script run from elsewhere is the same command
    options, source = program_options(ctx.run.options, argv, secrets)
    section: dict[str, Any] = {
        "argv": argv,
        # Where the command ran, relative to the repository: a rerun starts it there again.
        "cwd": _relative(ctx.cwd.resolve(), root),
        "options": options,
        # argv: only what the command line says (an option left out has no known value);
        # otherwise where the values with their defaults were read (``capture/options.py``).
        "options_source": source,
        "entry": entry,
        "call": scalar_call(ctx.run.call, secrets),
    }
    # Every variable's name, and its value where it is no secret: a knob a program reads from
    # its environment; the volatile ones by name only (``capture/variables.py``).
    section["env"], section["env_volatile"] = probe_variables(secrets)
    try:
        found = sources(root, ctx.cwd, entry_path)
    except Exception as exc:  # a module table that changed mid-walk, an odd __file__
        found = unavailable(f"listing imported sources failed: {first_line(exc)}")
    section["sources"] = found
    return section
