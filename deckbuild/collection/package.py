"""Reading what a deckbuild .apkg ships: each note's GUID, note type, fields by name, tags, mod and
deck, and the media files it carries."""

from __future__ import annotations

import json
import sqlite3
import tempfile
import zipfile
from collections.abc import Iterable
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


def read_package(path: Path) -> dict[str, ShippedNote]:
    """The notes of a package written by deckbuild (genanki's collection.anki2), by GUID."""
    with zipfile.ZipFile(path) as zf, tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "collection.anki2"
        db.write_bytes(zf.read("collection.anki2"))
        conn = sqlite3.connect(db)
        try:
            models_json, decks_json = conn.execute("select models, decks from col").fetchone()
            rows = conn.execute("select guid, mid, mod, flds, tags from notes order by id").fetchall()
            # One deck per note in deckbuild's packages: the deck of its first card.
            card_decks = dict(
                conn.execute("select n.guid, c.did from cards c join notes n on n.id = c.nid order by c.ord desc").fetchall()
            )
        finally:
            conn.close()
    models = json.loads(models_json)
    decks = {int(did): str(d["name"]) for did, d in json.loads(decks_json).items()}
    names = {int(mid): (m["name"], [f["name"] for f in sorted(m["flds"], key=lambda f: f["ord"])]) for mid, m in models.items()}
    out = {}
    for guid, mid, mod, flds, tags in rows:
        name, fields = names[int(mid)]
        deck = decks.get(int(card_decks.get(guid, 0)), "")
        values = dict(zip(fields, flds.split("\x1f"), strict=True))
        out[guid] = ShippedNote(guid, name, values, tuple(tags.split()), int(mod), deck, int(mid))
    return out


def media_names(path: Path) -> tuple[str, ...]:
    """The names of the media files a package carries (its zip's `media` map), sorted."""
    with zipfile.ZipFile(path) as zf:
        return tuple(sorted(str(name) for name in _media_index(zf).values()))


def read_media(path: Path, names: Iterable[str]) -> dict[str, bytes]:
    """The bytes of the package's media files of these names."""
    wanted = set(names)
    with zipfile.ZipFile(path) as zf:
        return {str(name): zf.read(entry) for entry, name in sorted(_media_index(zf).items()) if name in wanted}


def _media_index(zf: zipfile.ZipFile) -> dict[str, str]:
    return {str(k): str(v) for k, v in json.loads(zf.read("media")).items()} if "media" in zf.namelist() else {}
