"""Compare two published decks (.apkg files or recorded releases): notes, note types, media.

The report is a function of the changeset of the new side against the old one as its baseline."""

from __future__ import annotations

import sqlite3
import zipfile
from dataclasses import dataclass
from pathlib import Path

from deckbuild.changeset import Baseline, Changeset, changes
from deckbuild.errors import LocatedError, Location
from deckbuild.model import RenderedNote, content_hash


@dataclass(frozen=True)
class DeckNote:
    card_id: str
    front: str
    fields: tuple[str, ...]
    field_names: tuple[str, ...]
    tags: tuple[str, ...]
    deck: str = ""  # its subdeck under the deck's name ("" = the deck itself)


@dataclass(frozen=True)
class Published:
    """What a learner receives: notes by GUID, note type schemas by name, media names."""

    label: str
    notes: dict[str, DeckNote]
    notetypes: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
    media: frozenset[str]


def load(spec: str, root: Path) -> Published:
    """An .apkg path, or a version recorded in releases/ (e.g. 1.1.0)."""
    path = Path(spec)
    if path.suffix == ".apkg" or path.is_file():
        return _from_apkg(path)
    from deckbuild.apkg.notetypes import NOTETYPES
    from deckbuild.release.versioning import read_snapshot, snapshot_path

    snap_path = snapshot_path(root, spec)
    if not snap_path.exists():
        raise LocatedError(
            Location(spec), "E504", f"'{spec}' is neither an .apkg file nor a recorded release in {root / 'releases'}"
        )
    snap = read_snapshot(snap_path)
    from deckbuild.notetypes.load import load_notetypes

    declared, _declared_problems = load_notetypes(root)  # the project's own note types, named as packaged
    known = {**NOTETYPES, **declared}
    notes = {}
    for n in snap.notes.values():
        names = known[n.notetype].fields if n.notetype in known else tuple(f"field{i}" for i in range(len(n.fields)))
        notes[n.guid] = DeckNote(n.card_id, n.front, n.fields, tuple(names), n.tags, n.deck)
    # Name note types as the package does, so a release and an .apkg compare like for like.
    from deckbuild.config import load_config

    config, _problems = load_config(root)
    namespace = config.namespace if config else ""

    def name(key: str) -> str:
        return known[key].name(namespace) if key in known and namespace else key

    schemas = {name(k): (tuple(v["fields"]), tuple(v["templates"])) for k, v in snap.schemas.items()}
    return Published(f"release {snap.version}", notes, schemas, frozenset(snap.media))


def _from_apkg(path: Path) -> Published:
    from deckbuild.apkg.read import read_contents
    from deckbuild.release.versioning import front_text

    try:
        contents = read_contents(path)
    except (OSError, zipfile.BadZipFile, KeyError, sqlite3.Error, ValueError) as exc:
        raise LocatedError(Location(str(path)), "E504", f"cannot read the package: {exc}") from None
    notetypes = {m.name: (m.fields, m.templates) for m in contents.notetypes.values()}
    top = min((name for did, name in contents.decks.items() if did != 1), key=len, default="")
    notes = {}
    for guid, shipped in contents.notes.items():
        model = contents.notetypes[shipped.notetype_id]
        fields = tuple(shipped.fields.values())
        kind = "cloze" if model.cloze and "Context" in model.fields else "qa"  # the built-in cloze type
        front = front_text(RenderedNote(shipped.card_id, guid, kind, fields, (), 0, ""))
        notes[guid] = DeckNote(shipped.card_id, front, fields, model.fields, shipped.tags, _subdeck(shipped.deck, top))
    return Published(path.name, notes, notetypes, frozenset(contents.media.values()))


def _subdeck(deck: str, top: str) -> str:
    """A note's deck under the package's own deck `top` (its shortest deck name but Anki's Default), as releases record it."""
    return deck[len(top) + 2 :] if deck.startswith(top + "::") else ""


def diff(old: Published, new: Published) -> str:
    """A readable report; the same inputs always give the same text."""
    return report(changeset_of(old, new), old, new)


def _notetype(note: DeckNote) -> str:
    """A note's type as a diff knows it: its field names (a release and a package name types differently)."""
    return "\x1f".join(note.field_names)


def _rendered(key: str, guid: str, note: DeckNote) -> RenderedNote:
    fields, tags = note.fields, note.tags
    return RenderedNote(key, guid, _notetype(note), fields, tags, 0, content_hash("", fields, tags), deck=note.deck)


def _keys(old: Published, new: Published) -> tuple[dict[str, str], dict[str, str]]:
    """Each side's notes by GUID -> the id the changeset knows them by: the card id, except that a
    package's note without a CardId field (a declared note type, known by its GUID only) takes
    the other side's id for it."""

    def key(guid: str, note: DeckNote, other: dict[str, DeckNote]) -> str:
        twin = other.get(guid)
        return twin.card_id if note.card_id == guid and twin is not None else note.card_id

    return (
        {g: key(g, n, new.notes) for g, n in old.notes.items()},
        {g: key(g, n, old.notes) for g, n in new.notes.items()},
    )


def changeset_of(old: Published, new: Published) -> Changeset:
    """What `new` ships that `old` did not, or ships differently: the changeset against `old` as the baseline."""
    old_keys, new_keys = _keys(old, new)
    olds = [(old_keys[g], g, n) for g, n in old.notes.items()]
    base = Baseline(
        {k: content_hash("", n.fields, n.tags) for k, _g, n in olds},
        {g: k for k, g, _n in olds},
        {k: _rendered(k, g, n) for k, g, n in olds},
        dict(old.notetypes),
        {name: "" for name in old.media},
    )
    return changes(
        base,
        [_rendered(new_keys[g], g, n) for g, n in new.notes.items()],
        field_names={_notetype(n): n.field_names for n in new.notes.values()},
        notetypes=dict(new.notetypes),
        media={name: "" for name in new.media},
    )


def report(changes: Changeset, old: Published, new: Published) -> str:
    """The text of `deckbuild diff`: the changeset of `new` against `old`, each note named by its id and front."""
    old_keys, new_keys = _keys(old, new)
    now = {new_keys[g]: n for g, n in new.notes.items()}
    before = {old_keys[g]: n for g, n in old.notes.items()}
    added = [now[c.card_id] for c in changes.of_kind("added")]
    removed = [before[k] for k in changes.removed]
    retired = [before[c.card_id] for c in changes.of_kind("retired")]  # named by the front it had, not the notice
    renamed = [(before[c.previous], now[c.card_id]) for c in changes.of_kind("renamed")]
    changed = []
    for c in changes.of_kind("changed", "restored", "still_retired"):
        changed.append((now[c.card_id], [*c.fields, *(["tags"] if c.tags else [])]))
    renamed_ids = {c.card_id for c in changes.of_kind("renamed")}
    moved = [now[k] for k, _before, _now in changes.moved if k not in renamed_ids]
    only_moved = [n for n in moved if all(n is not c for c, _names in changed)]
    unchanged = len(now) - len(added) - len(changed) - len(retired) - len(renamed) - len(only_moved)
    renames = f", {len(renamed)} renamed" if renamed else ""
    moves = f", {len(moved)} moved" if moved else ""
    lines = [
        f"{old.label} -> {new.label}",
        f"notes: {len(added)} added, {len(changed)} changed{renames}{moves}, {len(retired)} retired, {len(removed)} removed,"
        f" {unchanged} unchanged",
    ]
    lines += [f"  + {n.card_id} — {n.front}" for n in added]
    lines += [f"  ~ {n.card_id} — {n.front} ({', '.join(names)})" for n, names in changed]
    lines += [f"  > {a.card_id} -> {b.card_id} — {b.front} (renamed: same note, history kept)" for a, b in renamed]
    lines += [
        f"  ↦ {n.card_id} — {n.front} (moved to {n.deck or 'the deck itself'}: a plain import leaves existing cards"
        " where they are; `deckbuild push` moves them)"
        for n in moved
    ]
    lines += [f"  x {n.card_id} — {n.front} (retired)" for n in retired]
    lines += [f"  - {n.card_id} — {n.front} (no longer shipped; Anki keeps it)" for n in removed]
    type_lines = []
    for name in sorted({*changes.notetypes_added, *changes.notetypes_dropped, *changes.notetypes}):
        a_schema, b_schema = old.notetypes.get(name), new.notetypes.get(name)
        if a_schema is None:
            type_lines.append(f"  + {name}")
        elif b_schema is None:
            type_lines.append(f"  - {name}")
        else:
            type_lines.append(
                f"  ~ {name}: fields {list(a_schema[0])} -> {list(b_schema[0])}, templates {list(a_schema[1])} -> {list(b_schema[1])}"
            )
    lines.append(f"note types: {'unchanged' if not type_lines else f'{len(type_lines)} changed'}")
    lines += type_lines
    lines.append(f"media: {len(changes.media_added)} added, {len(changes.media_dropped)} removed")
    lines += [f"  + {m}" for m in changes.media_added] + [f"  - {m}" for m in changes.media_dropped]
    return "\n".join(lines) + "\n"
