"""Compare two published decks (.apkg files or recorded releases): notes, note types, media."""

from __future__ import annotations

import sqlite3
import zipfile
from dataclasses import dataclass
from pathlib import Path

from deckbuild.errors import LocatedError, Location
from deckbuild.model import RETIRED_TAG


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
    from deckbuild.model import RenderedNote
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
    added = sorted((n for g, n in new.notes.items() if g not in old.notes), key=lambda n: n.card_id)
    removed = sorted((n for g, n in old.notes.items() if g not in new.notes), key=lambda n: n.card_id)
    retired = []
    changed = []
    renamed = []
    moved = []
    for guid in sorted(set(old.notes) & set(new.notes), key=lambda g: new.notes[g].card_id):
        a, b = old.notes[guid], new.notes[guid]
        if RETIRED_TAG in b.tags and RETIRED_TAG not in a.tags:
            retired.append(a)  # named by the front it had, not the retired notice
        elif a.card_id != b.card_id and guid not in (a.card_id, b.card_id):
            # one GUID, a new id: the card kept its note (previous_ids); a package's note without
            # a CardId field (a declared note type) is known by its GUID only
            renamed.append((a, b))
        elif a.fields != b.fields or a.tags != b.tags or a.deck != b.deck:
            if a.deck != b.deck:
                moved.append(b)
            if a.fields == b.fields and a.tags == b.tags:
                continue
            names = [name for name, x, y in zip(b.field_names, a.fields, b.fields, strict=False) if x != y]
            if set(a.tags) != set(b.tags):
                names.append("tags")
            changed.append((b, names))
    only_moved = [n for n in moved if all(n is not c for c, _names in changed)]
    unchanged = len(set(old.notes) & set(new.notes)) - len(changed) - len(retired) - len(renamed) - len(only_moved)
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
    for name in sorted(set(old.notetypes) | set(new.notetypes)):
        a_schema, b_schema = old.notetypes.get(name), new.notetypes.get(name)
        if a_schema == b_schema:
            continue
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
    media_added = sorted(new.media - old.media)
    media_removed = sorted(old.media - new.media)
    lines.append(f"media: {len(media_added)} added, {len(media_removed)} removed")
    lines += [f"  + {m}" for m in media_added] + [f"  - {m}" for m in media_removed]
    return "\n".join(lines) + "\n"
