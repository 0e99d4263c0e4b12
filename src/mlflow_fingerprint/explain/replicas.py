"""The records of a recipe's replicates, derived from one read record and checked by their hashes.

Why: a team's history is a few hundred recipes, each run with many seeds, and reading one
record per run is most of what ``explain`` costs (one artifact request per run on a server).
Runs whose ``env``, ``numerics`` and ``replicate`` hash tags are equal hold records equal but for
their seeds (``model.hashing.replicate_payload``). So ``explain`` reads the record of one run of
each such group (its base) and derives the others' from it: the seed a run's
``fingerprint.seed`` tag names, put where the base has its own seed, in the fields that hold
seeds (``model.hashing.SEED_FREE``, options and call arguments named like a seed).

Never a guess: a derived record is used only where its ``recipe`` and ``fingerprint`` hashes,
computed again from it, are the run's own tags, and the base's own ``env`` and ``numerics``
sections hash to its tags; it is then equal to the run's record in every hashed field (what
``tracking.experiment.share_key`` trusts for runs with equal tags). Any other run (a seed held
somewhere else, a seed tag of another form, a record edited after its hashes) returns None here
and its record is read for itself.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .. import layout
from ..compare.replicates import tag_seed
from ..model.hashing import (
    GROUPS,
    HASH_LENGTH,
    TF_RECIPE,
    canonical_json,
    digest,
    field_payload,
    group_fields,
    group_payload,
    is_seed_name,
)
from ..model.missing import MISSING
from ..model.record import get_path
from ..tracking.experiment import StoredRun

# The tags that say a run's record equals another's but for its seeds, and those that check it.
GROUP_TAGS = (
    layout.TAG_HASH_ENV,
    layout.TAG_HASH_NUMERICS,
    layout.TAG_HASH_REPLICATE,
    layout.TAG_SCHEMA,
)
CHECK_TAGS = (layout.TAG_HASH_RECIPE, layout.TAG_HASH)


def group_key(run: StoredRun) -> tuple[str, ...] | None:
    """What the runs of one recipe share in their tags; None where a tag is absent or
    ``unavailable``, or the run names no seed in a form :func:`derived` can put in place. The
    first run with a key is read; the others with it are derived from its record."""
    key = tuple(run.tags.get(tag, "") for tag in GROUP_TAGS)
    checks = [run.tags.get(tag, "") for tag in CHECK_TAGS]
    if not all((*key, *checks)) or "unavailable" in (*key, *checks):
        return None
    if tag_seed(run.tags.get(layout.TAG_SEED)) is None:
        return None
    return key


# What no seed is in: a record's text, numbers other than integers, flags and nulls.
_LEAVES = frozenset({str, float, bool, type(None)})


def _swapped(value: Any, old: int, new: int) -> Any:
    """``value`` with every integer equal to ``old`` (nested anywhere) as ``new``; the same
    object where nothing changes, so records share what their seeds leave alone. A replicate's
    record makes its seeded sections at each read, so nothing is built where nothing changes."""
    if type(value) in _LEAVES:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return new if value == old else value
    if isinstance(value, Mapping):
        changed = {k: s for k, v in value.items() if (s := _swapped(v, old, new)) is not v}
        return {**value, **changed} if changed else value
    if isinstance(value, list):
        items = [_swapped(v, old, new) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _named(values: Any, old: int, new: int) -> Any:
    """Options or call arguments with those named like a seed swapped (an option's value is
    its text, so ``"3"`` is swapped as well as ``3``)."""
    if not isinstance(values, Mapping):
        return values
    changed = {}
    for key, value in values.items():
        if not is_seed_name(str(key)):
            continue
        if value == str(old) and isinstance(value, str):
            changed[key] = str(new)
        elif (swapped := _swapped(value, old, new)) is not value:
            changed[key] = swapped
    return {**values, **changed} if changed else values


def _loaders(data: Any, old: int, new: int) -> Any:
    """``data`` with each loader's ``generator.initial_seed`` swapped."""
    if not isinstance(data, Mapping) or not isinstance(data.get("loaders"), list):
        return data
    loaders = []
    for loader in data["loaders"]:
        generator = loader.get("generator") if isinstance(loader, Mapping) else None
        if isinstance(generator, Mapping) and "initial_seed" in generator:
            seed = _swapped(generator["initial_seed"], old, new)
            if seed is not generator["initial_seed"]:
                loader = {**loader, "generator": {**generator, "initial_seed": seed}}
        loaders.append(loader)
    if all(a is b for a, b in zip(loaders, data["loaders"], strict=True)):
        return data
    return {**data, "loaders": loaders}


# The top-level sections a seed is put into (``_section``); every other is the base's own.
SEEDED = frozenset({"seeds", "data", "program", *(p.partition(".")[0] for p in TF_RECIPE)})


def _section(base: Mapping[str, Any], key: str, old: int, new: int) -> Any:
    """Section ``key`` of ``base`` with seed ``old`` replaced by ``new`` wherever it holds a
    seed; the base's own object where nothing changes, MISSING where the base has none (a
    ``seeds`` or ``data`` the base lacks reads as None, as a copy of the record gets them)."""
    if key == "seeds":
        return _swapped(base.get("seeds"), old, new)
    if key == "data":
        return _loaders(base.get("data"), old, new)
    held = base.get(key, MISSING)
    if key == "program" and isinstance(held, Mapping):
        named = {k: _named(held[k], old, new) for k in ("options", "call") if k in held}
        if any(v is not held[k] for k, v in named.items()):
            return {**held, **named}
        return held
    for path in TF_RECIPE:  # tensorflow.global_seed, keras.global_seed
        section, _, name = path.partition(".")
        if section == key and isinstance(held, Mapping) and name in held:
            return {**held, name: _swapped(held[name], old, new)}
    return held


class Reseeded(Mapping[str, Any]):
    """A replicate's record, made from its base's as it is read: each section that holds a seed
    (``SEEDED``) is the base's with this run's seed in place, made again at each read; every
    other section is the base's own object; ``params`` and the ``recipe`` and ``fingerprint``
    hashes are the run's.

    Why not a copy: at 100,000 runs a copy of each replicate's record (its top level, its seeds,
    options and hashes) was 1.3 KB a run, the most ``explain`` held; this is the seed, the
    params and two hashes. A section read twice is two equal objects, never one changed. The
    two hashes are held as the bytes their hex digits write where they are digests (as those
    :meth:`Base.derived` checks are): 49 bytes a run, where two strings were 186."""

    __slots__ = ("_at", "_base", "_hashes", "_new", "_old", "_params")

    def __init__(
        self,
        base: Mapping[str, Any],
        old: int,
        new: int,
        params: Mapping[str, Any] | None = None,
        hashes: tuple[str, str] | bytes | None = None,
        at: Mapping[str, Any] | None = None,
    ) -> None:
        self._base = base
        self._old = old
        self._new = new
        self._params = params
        # (recipe, fingerprint), where the base has hashes to put them in; bytes: as held
        self._hashes = hashes if hashes is None or isinstance(hashes, bytes) else _packed(hashes)
        self._at = at  # where the base's seeded sections hold its seed (``seed_positions``)

    def __getitem__(self, key: str) -> Any:
        if key == "params" and self._params is not None:
            return self._params
        if key == "hashes" and self._hashes is not None:
            recipe, fingerprint = _unpacked(self._hashes)
            return {**self._base["hashes"], "recipe": recipe, "fingerprint": fingerprint}
        if key in SEEDED and self._new != self._old:
            value = _section(self._base, key, self._old, self._new)
            if value is MISSING:
                raise KeyError(key)
            return value
        return self._base[key]

    def __iter__(self) -> Iterator[str]:
        yield from self._base
        yield from (k for k in ("seeds", "data", "params") if k not in self._base and k in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, key: object) -> bool:
        if key in self._base:
            return True
        if key == "params":
            return self._params is not None
        return key in ("seeds", "data") and self._new != self._old

    @property
    def base(self) -> Mapping[str, Any]:
        """The record this one is made from: what its replicates share."""
        return self._base

    @property
    def seed(self) -> int:
        """This record's seed."""
        return self._new

    @property
    def made_from(self) -> tuple[Mapping[str, Any], int, Mapping[str, Any] | None]:
        """What its recipe's replicates share: the base, the base's seed and where the base
        holds it; with :attr:`seed`, :attr:`params` and :attr:`held_hashes` it is made again
        (``explain.records``)."""
        return self._base, self._old, self._at

    @property
    def params(self) -> Mapping[str, Any] | None:
        """The run's own params, None where the base's are read."""
        return self._params

    @property
    def held_hashes(self) -> bytes | tuple[str, str] | None:
        """Its recipe and fingerprint hashes as held: the bytes two digests write, else the
        pair; None where the base has no hashes to put them in."""
        return self._hashes

    @property
    def reseeded(self) -> bool:
        """Its seed is not its base's: its seeded sections are made, and a ``seeds`` or ``data``
        section the base lacks reads as None."""
        return self._new != self._old

    def walked(self) -> Mapping[str, Any]:
        """This record as the walk that finds the fields that vary reads it: each seeded section
        an :class:`Overlay` of the base's, with the seed in the places it holds it, not a new
        copy of the section. The walk reads a section from every run before it goes into it, so
        every replicate's copy of its ``program`` (with its options and call) was held at once
        (the walk's peak at 10,000 runs: 810 bytes a run with copies, 637 with overlays); an
        overlay is one small object, and the parts of a section no seed is in are the base's own
        objects, which the walk reads once for all its replicates. Itself where it has no places
        or its own seed."""
        if self._at is None or self._new == self._old:
            return self
        return Overlay(self, self._at, self._new, under=self._base)


_DIGEST = re.compile(f"[0-9a-f]{{{HASH_LENGTH}}}")


def _packed(hashes: tuple[str, str]) -> bytes | tuple[str, str]:
    """Two digests (``HASH_LENGTH`` lowercase hex digits each) as the bytes they write; any
    other pair as it is."""
    if all(_DIGEST.fullmatch(h) for h in hashes):
        return bytes.fromhex("".join(hashes))
    return hashes


def _unpacked(held: bytes | tuple[str, str]) -> tuple[str, str]:
    """The pair :func:`_packed` was given."""
    if isinstance(held, bytes):
        text = held.hex()
        return text[:HASH_LENGTH], text[HASH_LENGTH:]
    return held


# A place in a seeded section that holds the seed: as an integer, or as the text of an option.
SEED = "seed"
TEXT = "text"


class Overlay(Mapping[str, Any]):
    """``held`` (a base's section) with the new seed put in the places ``where`` names (a key ->
    :data:`SEED`, :data:`TEXT`, or the places one level down), made as it is read. ``under``:
    where the values at those places are read, where not ``held`` itself (a replicate's whole
    record, whose own seeded sections are copies: the base's are overlaid instead)."""

    __slots__ = ("_held", "_new", "_under", "_where")

    def __init__(
        self,
        held: Mapping[str, Any],
        where: Mapping[Any, Any],
        new: int,
        under: Mapping[str, Any] | None = None,
    ) -> None:
        self._held = held
        self._where = where
        self._new = new
        self._under = held if under is None else under

    def __getitem__(self, key: str) -> Any:
        where = self._where.get(key)
        if where is None:
            return self._held[key]
        return put_seed(self._under[key], where, self._new)

    def __iter__(self) -> Iterator[str]:
        return iter(self._held)

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, key: object) -> bool:
        return key in self._held


def put_seed(value: Any, where: Any, new: int) -> Any:
    """``value`` with ``new`` in the places ``where`` names: a list is made again (its items in
    place, overlaid where they hold the seed), a mapping overlaid."""
    if where == SEED:
        return new
    if where == TEXT:
        return str(new)
    if isinstance(value, Mapping):
        return Overlay(value, where, new)
    return [put_seed(v, where[i], new) if i in where else v for i, v in enumerate(value)]


def seed_places(held: Any, probe: Any) -> Any:
    """Where ``probe`` (``held`` with another seed put in) differs from ``held``: None where
    nowhere; :data:`SEED` or :data:`TEXT` for a leaf; else the places under each key or index."""
    if held is probe:
        return None
    if isinstance(held, Mapping) and isinstance(probe, Mapping):
        found = {k: p for k in held if (p := seed_places(held[k], probe.get(k))) is not None}
        return found or None
    if isinstance(held, list) and isinstance(probe, list) and len(held) == len(probe):
        pairs = enumerate(zip(held, probe, strict=True))
        listed = {i: p for i, (a, b) in pairs if (p := seed_places(a, b)) is not None}
        return listed or None
    if type(held) is type(probe) and held == probe:
        return None
    return TEXT if isinstance(probe, str) else SEED


def seed_positions(base: Mapping[str, Any], old: int) -> dict[str, Any]:
    """Where each seeded section of ``base`` holds its seed ``old``, found by putting another
    seed in (the places do not depend on which): what ``Reseeded.walked`` overlays."""
    probe = old + 1
    found = {}
    for key in SEEDED:
        if key in base:
            places = seed_places(base[key], _section(base, key, old, probe))
            if places is not None:
                found[key] = places
    return found


def sound_base(base: Mapping[str, Any], tags: Mapping[str, str]) -> bool:
    """The base's own env and numerics sections hash to its tags: what it lends its replicates
    is what their equal tags vouch for."""
    return all(
        digest(group_payload(base, group)) == tags.get(layout.HASH_TAGS[group])
        for group in ("env", "numerics")
    )


def _field_json(record: Mapping[str, Any], name: str) -> str:
    """One part of the recipe hash's payload, as ``group_payload`` writes it."""
    return canonical_json(field_payload(record, "recipe", name))


@dataclass(frozen=True)
class Base:
    """A read record that lends itself to its replicates (:func:`lender`), with the canonical
    JSON of each of its recipe fields, written once: a replicate shares all but its seeds, so
    checking its recipe hash writes only those again."""

    record: Mapping[str, Any]
    tags: Mapping[str, str]
    written: Mapping[str, tuple[Any, str]]  # recipe field -> (the base's object there, its JSON)
    at: Mapping[str, Any]  # where its seeded sections hold its seed (``seed_positions``)

    def recipe_hash(self, record: Mapping[str, Any]) -> str:
        """``digest(group_payload(record, "recipe"))``, the base's JSON reused for each field
        where ``record`` holds the very object the base does."""
        parts = []
        for name in sorted(group_fields(record, "recipe")):
            value = get_path(record, name)
            held = self.written.get(name)
            text = held[1] if held is not None and held[0] is value else _field_json(record, name)
            parts.append(f"{canonical_json(name)}:{text}")
        payload = "{" + ",".join(parts) + "}"
        return hashlib.sha256(payload.encode()).hexdigest()[:HASH_LENGTH]

    def derived(self, run: StoredRun, params: Mapping[str, Any] | None = None) -> Reseeded | None:
        """``run``'s record (a run with the base's :func:`group_key`), its ``params`` in place
        of the base's, or None where the record so derived does not hash to the run's own
        ``recipe`` and ``fingerprint`` tags."""
        old = tag_seed(self.tags.get(layout.TAG_SEED))
        new = tag_seed(run.tags.get(layout.TAG_SEED))
        if old is None or new is None:
            return None
        # a plain copy for the hash, each section made once: hashing reads some several times
        recipe = self.recipe_hash(dict(Reseeded(self.record, old, new)))
        env, numerics = (run.tags.get(layout.HASH_TAGS[g]) for g in ("env", "numerics"))
        overall = digest([env, numerics, recipe])
        if recipe != run.tags.get(layout.TAG_HASH_RECIPE) or overall != run.tags.get(
            layout.TAG_HASH
        ):
            return None
        hashes = (recipe, overall) if isinstance(self.record.get("hashes"), Mapping) else None
        return Reseeded(self.record, old, new, params, hashes, self.at)


def lender(record: Mapping[str, Any], tags: Mapping[str, str]) -> Base | None:
    """The run's record as the base of its replicates, None where it is not :func:`sound_base`."""
    if not sound_base(record, tags):
        return None
    written = {
        name: (get_path(record, name), _field_json(record, name)) for name in GROUPS["recipe"]
    }
    old = tag_seed(tags.get(layout.TAG_SEED))
    return Base(record, tags, written, {} if old is None else seed_positions(record, old))
