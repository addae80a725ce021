"""The only module that imports genanki: stamped notes -> reproducible .apkg bytes.

genanki's defaults are replaced where they hurt learners: every note carries its own mod
(not the package time), note types carry their own mod, field and template dicts carry
stable ids, and the zip is written with fixed entry dates and modes in sorted order, so
the same inputs give the same bytes on any machine.
"""

from __future__ import annotations

import json
import sqlite3
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import genanki

from deckbuild import ids
from deckbuild.model import MediaFile, StampedNote
from deckbuild.notetypes import NoteType

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


class _Model(genanki.Model):  # type: ignore[misc]
    """A genanki Model whose mod is ours, not the package timestamp."""

    def __init__(self, *args: Any, mod: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deckbuild_mod = mod

    def to_json(self, timestamp: float, deck_id: int) -> dict[str, Any]:
        data: dict[str, Any] = super().to_json(self._deckbuild_mod, deck_id)
        return data


class _Note(genanki.Note):  # type: ignore[misc]
    """A genanki Note that writes its own mod (for the note and its cards)."""

    def __init__(self, *args: Any, mod: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deckbuild_mod = mod

    def write_to_db(self, cursor: Any, timestamp: float, deck_id: int, id_gen: Any) -> None:
        super().write_to_db(cursor, self._deckbuild_mod, deck_id, id_gen)


def _model(notetype: NoteType, namespace: str, mod: int) -> _Model:
    key = notetype.key
    return _Model(
        notetype.model_id(namespace),
        notetype.name(namespace),
        fields=[{"name": name, "id": ids.field_id(namespace, key, name)} for name in notetype.fields],
        templates=[
            {"name": name, "qfmt": front, "afmt": back, "id": ids.template_id(namespace, key, name)}
            for name, front, back in notetype.templates
        ],
        css=notetype.css,
        model_type=genanki.Model.CLOZE if notetype.is_cloze else genanki.Model.FRONT_BACK,
        sort_field_index=0,
        mod=mod,
    )


def write_package(
    out_path: Path,
    *,
    deck_name: str,
    deck_description: str,
    namespace: str,
    notetypes: Mapping[str, NoteType],
    notetype_mods: Mapping[str, int],
    notes: Sequence[StampedNote],
    media: Sequence[MediaFile],
) -> bytes:
    """Build the .apkg in memory-backed temp files and return its bytes (the caller writes)."""
    models = {key: _model(nt, namespace, notetype_mods[key]) for key, nt in notetypes.items()}
    deck = genanki.Deck(ids.deck_id(namespace, deck_name), deck_name, description=deck_description)
    for stamped in notes:
        note = stamped.note
        deck.add_note(
            _Note(
                model=models[note.notetype],
                fields=list(note.fields),
                tags=list(note.tags),
                guid=note.guid,
                due=note.due,
                sort_field=note.fields[0],
                mod=stamped.mod,
            )
        )
    for model in models.values():
        deck.add_model(model)  # ship every note type, even one no note uses yet
    timestamp = max([*notetype_mods.values(), *(n.mod for n in notes), 1])
    # In memory, not a temp file: a build writes nothing outside the project, even if killed.
    conn = sqlite3.connect(":memory:")
    try:
        cursor = conn.cursor()
        import itertools

        id_gen = itertools.count(int(timestamp) * 1000)
        genanki.Package(deck).write_to_db(cursor, timestamp, id_gen)
        conn.commit()
        db_bytes = conn.serialize()
    finally:
        conn.close()
    return _zip(db_bytes, sorted(media, key=lambda m: m.name))


def _zip(db_bytes: bytes, media: Sequence[MediaFile]) -> bytes:
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        _add(zf, "collection.anki2", db_bytes)
        _add(zf, "media", json.dumps({str(i): m.name for i, m in enumerate(media)}).encode())
        for index, item in enumerate(media):
            _add(zf, str(index), item.path.read_bytes())
    return buffer.getvalue()


def _add(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3
    zf.writestr(info, data)
