"""Reading what a deckbuild .apkg ships: each note's GUID, note type, fields by name, tags and mod."""

from __future__ import annotations

import json
import sqlite3
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ShippedNote:
    guid: str
    notetype: str  # the note type's name
    fields: dict[str, str]
    tags: tuple[str, ...]
    mod: int

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
            models = json.loads(conn.execute("select models from col").fetchone()[0])
            rows = conn.execute("select guid, mid, mod, flds, tags from notes order by id").fetchall()
        finally:
            conn.close()
    names = {int(mid): (m["name"], [f["name"] for f in sorted(m["flds"], key=lambda f: f["ord"])]) for mid, m in models.items()}
    out = {}
    for guid, mid, mod, flds, tags in rows:
        name, fields = names[int(mid)]
        out[guid] = ShippedNote(guid, name, dict(zip(fields, flds.split("\x1f"), strict=True)), tuple(tags.split()), int(mod))
    return out
