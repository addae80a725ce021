"""Reading a package deckbuild wrote: its notes (GUID, note type, fields by name, tags, mod,
deck), its note types, decks and cards, and the media files it carries.

The one reader of our own .apkg: push, status, diff and the variants' card count all read
through it.  The collection is read in memory (never unpacked to a file).
"""

from __future__ import annotations

import io
import json
import sqlite3
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ShippedNote:
    guid: str
    notetype: str  # the note type's name
    fields: dict[str, str]
    tags: tuple[str, ...]
    mod: int
    deck: str = ""  # the full name of the deck its cards ship in
    notetype_id: int = 0

    @property
    def card_id(self) -> str:
        return self.fields.get("CardId", self.guid)


@dataclass(frozen=True)
class PackagedNoteType:
    """A note type as the package carries it: its name, field and template names, and Anki's kind."""

    name: str
    fields: tuple[str, ...]
    templates: tuple[str, ...]
    cloze: bool  # Anki's cloze kind (type 1)


@dataclass(frozen=True)
class Contents:
    """Everything a package holds but its media bytes."""

    notes: Mapping[str, ShippedNote]  # by GUID, in note id order
    notetypes: Mapping[int, PackagedNoteType]  # by note type id, in the package's order
    decks: Mapping[int, str]  # deck id -> full name, in the package's order
    cards: int
    media: Mapping[str, str]  # zip entry -> media file name


def read_contents(source: Path | bytes) -> Contents:
    """A package (its path or its bytes) written by deckbuild (genanki's collection.anki2).

    Raises OSError, zipfile.BadZipFile, KeyError, sqlite3.Error or ValueError on a file that is
    not such a package."""
    with zipfile.ZipFile(source if isinstance(source, Path) else io.BytesIO(source)) as zf:
        db = zf.read("collection.anki2")
        media = _media_index(zf)
    conn = sqlite3.connect(":memory:")
    try:
        conn.deserialize(db)
        models_json, decks_json = conn.execute("select models, decks from col").fetchone()
        rows = conn.execute("select guid, mid, mod, flds, tags from notes order by id").fetchall()
        # One deck per note in deckbuild's packages: the deck of its first card.
        card_decks = dict(
            conn.execute("select n.guid, c.did from cards c join notes n on n.id = c.nid order by c.ord desc").fetchall()
        )
        cards = int(conn.execute("select count() from cards").fetchone()[0])
    finally:
        conn.close()
    notetypes = {
        int(mid): PackagedNoteType(
            str(m["name"]),
            tuple(str(f["name"]) for f in sorted(m["flds"], key=lambda f: f["ord"])),
            tuple(str(t["name"]) for t in m["tmpls"]),
            m.get("type") == 1,
        )
        for mid, m in json.loads(models_json).items()
    }
    decks = {int(did): str(d["name"]) for did, d in json.loads(decks_json).items()}
    notes = {}
    for guid, mid, mod, flds, tags in rows:
        notetype = notetypes[int(mid)]
        deck = decks.get(int(card_decks.get(guid, 0)), "")
        values = dict(zip(notetype.fields, flds.split("\x1f"), strict=True))
        notes[guid] = ShippedNote(guid, notetype.name, values, tuple(tags.split()), int(mod), deck, int(mid))
    return Contents(notes, notetypes, decks, cards, media)


def read_package(path: Path) -> dict[str, ShippedNote]:
    """The notes of a package written by deckbuild, by GUID."""
    return dict(read_contents(path).notes)


def media_names(path: Path) -> tuple[str, ...]:
    """The names of the media files a package carries (its zip's `media` map), sorted."""
    with zipfile.ZipFile(path) as zf:
        return tuple(sorted(_media_index(zf).values()))


def read_media(path: Path, names: Iterable[str]) -> dict[str, bytes]:
    """The bytes of the package's media files of these names."""
    wanted = set(names)
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(entry) for entry, name in sorted(_media_index(zf).items()) if name in wanted}


def _media_index(zf: zipfile.ZipFile) -> dict[str, str]:
    if "media" not in zf.namelist():
        return {}
    return {str(k): str(v) for k, v in json.loads(zf.read("media") or b"{}").items()}
