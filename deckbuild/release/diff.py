"""Compare two published decks (.apkg files or recorded releases): notes, note types, media."""

from __future__ import annotations

import json
import sqlite3
import tempfile
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
    from deckbuild.release.versioning import front_text

    try:
        with zipfile.ZipFile(path) as zf, tempfile.TemporaryDirectory() as tmp:
            zf.extract("collection.anki2", tmp)
            media = frozenset(json.loads(zf.read("media") or b"{}").values())
            conn = sqlite3.connect(Path(tmp) / "collection.anki2")
            try:
                models_json, decks_json = conn.execute("select models, decks from col").fetchone()
                models = json.loads(models_json)
                rows = conn.execute("select guid, mid, flds, tags from notes").fetchall()
                card_decks = dict(
                    conn.execute("select n.guid, c.did from cards c join notes n on n.id = c.nid order by c.ord desc").fetchall()
                )
            finally:
                conn.close()
    except (OSError, zipfile.BadZipFile, KeyError, sqlite3.Error, ValueError) as exc:
        raise LocatedError(Location(str(path)), "E504", f"cannot read the package: {exc}") from None
    notetypes = {m["name"]: (tuple(f["name"] for f in m["flds"]), tuple(t["name"] for t in m["tmpls"])) for m in models.values()}
    subdecks = _subdecks(json.loads(decks_json), card_decks)
    by_id = {str(m["id"]): m for m in models.values()}
    notes = {}
    from deckbuild.model import RenderedNote

    for guid, mid, flds, tags in rows:
        model = by_id.get(str(mid), {"flds": [], "type": 0})
        names = tuple(f["name"] for f in model["flds"])
        fields = tuple(flds.split("\x1f"))
        card_id = fields[names.index("CardId")] if "CardId" in names else guid
        kind = "cloze" if model.get("type") == 1 and "Context" in names else "qa"  # the built-in cloze type
        front = front_text(RenderedNote(card_id, guid, kind, fields, (), 0, ""))
        notes[guid] = DeckNote(card_id, front, fields, names, tuple(tags.split()), subdecks.get(guid, ""))
    return Published(path.name, notes, notetypes, media)


def _subdecks(decks: dict[str, dict[str, object]], card_decks: dict[str, int]) -> dict[str, str]:
    """Each note's deck under the package's own deck (its shortest deck name but Anki's Default), as releases record it."""
    names = {int(did): str(d["name"]) for did, d in decks.items()}
    top = min((name for did, name in names.items() if did != 1), key=len, default="")
    out = {}
    for guid, did in card_decks.items():
        name = names.get(int(did), "")
        out[guid] = name[len(top) + 2 :] if name.startswith(top + "::") else ""
    return out


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
