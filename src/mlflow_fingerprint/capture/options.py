"""The program's options as it saw them, defaults included: what ``program.options`` records.

The command line alone says only what the user typed: ``--lr 0.02`` in one run and nothing in the
other compares as "absent vs 0.02", although the second run trained with the default. The values
the program really used are read, without patching anything and without running any of its code:

- ``fingerprinted(options=...)``: what the program hands over (``vars(args)``, a Namespace, a
  dataclass, a mapping, an OmegaConf config);
- click (and typer, built on it): the current click context of the calling thread, whose
  ``params`` hold every parameter with its default;
- argparse: the ``Namespace`` (every ``dest``, defaults filled in by ``parse_args``) and the
  ``ArgumentParser`` found among the locals of the frames calling the training and their modules'
  globals; a parser alone gives the defaults, the command line the rest;
- Hydra: an OmegaConf ``DictConfig`` among those locals (the composed config a task gets).

Read on the thread that starts the run (the frames and click's context are that thread's), once per
run: a walk of a few dozen frames. Where none of these is found, ``program.options`` is the
command line parsed into ``--name value`` pairs, and an option one run did not pass has no known
value there (``program.options_source`` says ``argv``).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable, Iterator, Mapping
from types import FrameType
from typing import Any, Literal

OptionsSource = Literal["decorator", "click", "argparse", "hydra", "argv"]

MAX_FRAMES = 40
MAX_OPTIONS = 500
Scalar = str | int | float | bool | None


@dataclasses.dataclass(frozen=True)
class FoundOptions:
    """Options by name (``--num-workers`` is ``num-workers``) and where they were read."""

    source: OptionsSource
    values: Mapping[str, Any]


def plain(value: Any) -> Any:
    """A JSON-ready form: scalars as they are, lists of them as lists, anything else as text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple) and all(
        v is None or isinstance(v, bool | int | float | str) for v in value
    ):
        return list(value)
    return str(value)


def _spelling(dest: str) -> str:
    """argparse's convention: ``--num-workers`` has dest ``num_workers``."""
    return dest.replace("_", "-")


def _long_name(option_strings: Any, fallback: str) -> str:
    """The first ``--long`` option string without its dashes, else ``fallback``."""
    for text in option_strings or ():
        if isinstance(text, str) and text.startswith("--") and len(text) > 2:
            return text[2:]
    return fallback


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """A nested mapping as dotted keys (Hydra's ``optimizer.lr``)."""
    out: dict[str, Any] = {}
    if isinstance(value, Mapping):
        for key, item in value.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            out.update(_flatten(item, name) if isinstance(item, Mapping) else {name: plain(item)})
            if len(out) >= MAX_OPTIONS:
                break
    return out


def _omegaconf_container(value: Any) -> Mapping[str, Any] | None:
    """An OmegaConf DictConfig as a plain dict (interpolations resolved where they resolve)."""
    omegaconf = sys.modules.get("omegaconf")
    if omegaconf is None or not isinstance(value, omegaconf.DictConfig):
        return None
    try:
        return omegaconf.OmegaConf.to_container(value, resolve=True)  # type: ignore[no-any-return]
    except Exception:  # a missing value or a failing resolver: the config as written
        return omegaconf.OmegaConf.to_container(value, resolve=False)  # type: ignore[no-any-return]


def from_value(value: Any) -> dict[str, Any]:
    """``fingerprinted(options=...)``: a mapping, a Namespace, a dataclass or an OmegaConf
    config, as ``{name: value}``; argparse's dests spelled as options (``num-workers``)."""
    import argparse

    container = _omegaconf_container(value)
    if container is not None:
        return _flatten(container)
    if isinstance(value, argparse.Namespace):
        return {_spelling(k): plain(v) for k, v in vars(value).items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _flatten(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return _flatten(value)
    raise TypeError(
        "options must be a mapping, an argparse.Namespace, a dataclass or an OmegaConf config, "
        f"got {type(value).__name__}"
    )


def _click() -> FoundOptions | None:
    """The calling thread's click context (typer runs on click): every parameter of the command
    and of the groups above it, defaults included."""
    click = sys.modules.get("click")
    get = getattr(click, "get_current_context", None)
    if get is None:
        return None
    ctx = get(silent=True)
    if ctx is None:
        return None
    chain = []
    while ctx is not None:
        chain.append(ctx)
        ctx = ctx.parent
    values: dict[str, Any] = {}
    for context in reversed(chain):  # the outermost group first; a subcommand wins
        names = {
            p.name: _long_name(getattr(p, "opts", ()), str(p.name))
            for p in getattr(context.command, "params", ())
        }
        for name, value in context.params.items():
            values[names.get(name, _spelling(name))] = plain(value)
    return FoundOptions("click", values) if values else None


def _frames(start: FrameType | None) -> Iterator[FrameType]:
    frame = start
    for _ in range(MAX_FRAMES):
        if frame is None:
            return
        yield frame
        frame = frame.f_back


def _scan(start: FrameType | None, first: Iterable[Any]) -> tuple[Any, Any, Any]:
    """The nearest argparse Namespace, ArgumentParser and OmegaConf DictConfig among ``first``
    (the training function's arguments), the frames' locals, then their modules' globals
    (innermost first)."""
    import argparse

    omegaconf = sys.modules.get("omegaconf")
    config_type = getattr(omegaconf, "DictConfig", None)
    namespace = parser = config = None
    frames = list(_frames(start))
    scopes: list[Any] = [dict(enumerate(first)), *(f.f_locals for f in frames)]
    seen_globals: set[int] = set()
    for f in frames:
        if id(f.f_globals) not in seen_globals:
            seen_globals.add(id(f.f_globals))
            scopes.append(f.f_globals)
    for scope in scopes:
        for value in list(scope.values()):
            if namespace is None and isinstance(value, argparse.Namespace):
                namespace = value
            elif parser is None and isinstance(value, argparse.ArgumentParser):
                parser = value
            elif config is None and config_type is not None and isinstance(value, config_type):
                config = value
        if namespace is not None and parser is not None:
            break
    return namespace, parser, config


def _parser_names(parser: Any) -> dict[str, str]:
    """dest -> option name, from the parser's actions (help and version left out)."""
    import argparse

    skip = (argparse._HelpAction, argparse._VersionAction)
    return {
        action.dest: _long_name(action.option_strings, _spelling(action.dest))
        for action in parser._actions
        if not isinstance(action, skip) and action.dest is not argparse.SUPPRESS
    }


def _argparse(namespace: Any, parser: Any) -> FoundOptions | None:
    """The Namespace's values (named as the parser spells them, where it is known); a parser
    alone gives its defaults, overlaid with what the command line says."""
    import argparse

    names = _parser_names(parser) if parser is not None else {}
    if namespace is not None:
        return FoundOptions(
            "argparse",
            {names.get(k, _spelling(k)): plain(v) for k, v in vars(namespace).items()},
        )
    if parser is None:
        return None
    values = {
        name: plain(parser.get_default(dest))
        for dest, name in names.items()
        if parser.get_default(dest) is not argparse.SUPPRESS
    }
    aliases = {
        text.lstrip("-"): names[action.dest]
        for action in parser._actions
        if action.dest in names
        for text in action.option_strings
    }
    from .program import parse_options

    for key, value in (parse_options(sys.argv[1:]) or {}).items():
        if key != "_":
            values[aliases.get(key, key)] = value
    return FoundOptions("argparse", values)


def find(start: FrameType | None, first: Iterable[Any] = ()) -> FoundOptions | None:
    """The options of the program running the frames from ``start`` up (``first``: values to
    look at before them, the training function's arguments), read on this thread; None where no
    parser, config or click context is found. Never raises."""
    try:
        found = _click()
        if found is not None:
            return found
        namespace, parser, config = _scan(start, first)
        found = _argparse(namespace, parser)
        if found is not None:
            return found
        if config is not None:
            return FoundOptions("hydra", from_value(config))
    except Exception:  # an odd frame or a broken parser: the command line is still recorded
        return None
    return None
