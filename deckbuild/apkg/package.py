"""The only module that imports genanki: stamped notes -> reproducible .apkg bytes.

genanki's defaults are replaced where they hurt learners: every note carries its own mod
(not the package time), note types carry their own mod, field and template dicts carry
stable ids, and the zip is written with fixed entry dates and modes in sorted order, so
the same inputs give the same bytes on any machine.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import zipfile
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import genanki

from deckbuild.apkg import ids
from deckbuild.apkg.notetypes import NoteType, field_key
from deckbuild.model import MediaFile, StampedNote

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


class _Model(genanki.Model):  # type: ignore[misc]
    """A genanki Model whose mod is ours, not the package timestamp."""

    def __init__(self, *args: Any, mod: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deckbuild_mod = mod

    def to_json(self, timestamp: float, deck_id: int) -> dict[str, Any]:
        data: dict[str, Any] = super().to_json(self._deckbuild_mod, deck_id)
        return data


_NOTE_SQL = "INSERT INTO notes VALUES(?,?,?,?,?,?,?,?,?,?,?)"
_CARD_SQL = "INSERT INTO cards VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"


def _note_rows(
    notes: Sequence[StampedNote],
    models: Mapping[str, _Model],
    deck_id: int,
    id_gen: Iterator[int],
    card_rows: list[tuple[Any, ...]],
    card_ords: MutableMapping[str, str],
) -> Iterator[tuple[Any, ...]]:
    """The notes table rows genanki's Note.write_to_db would insert one by one (cards into card_rows).

    Same values and the same id sequence (note id, then its cards' ids), but built here
    so they go in with one executemany each: genanki's per-note work (a regex over every
    field looking for invalid HTML tags, tag-list validation, one execute per row) is most
    of its time for a large deck, and our fields are escaped and our tags checked already.
    Which cards a note gets is still genanki's decision (`Note.cards`: `_req` for
    front/back, the cloze numbers for cloze), remembered in `card_ords` under the note
    type's content and the note's content hash (the fields and tags it is computed from),
    so a rebuild asks genanki only about changed notes.
    """
    model_keys = {key: _model_key(model) for key, model in models.items()}
    for stamped in notes:
        note, mod = stamped.note, stamped.mod
        model = models[note.notetype]
        if len(note.fields) != len(model.fields):
            raise ValueError(f"note {note.card_id!r}: {len(note.fields)} fields for note type {model.name!r}")
        fields = list(note.fields)
        note_id = next(id_gen)
        tags = " " + " ".join(note.tags) + " "
        # Yielded, not collected: executemany consumes one row at a time (no second copy of every field).
        yield (note_id, note.guid, model.model_id, mod, -1, tags, "\x1f".join(fields), fields[0], 0, 0, "")
        key = f"{model_keys[note.notetype]}:{note.content_hash}"
        known = card_ords.get(key)
        if known is None:
            made = genanki.Note(model=model, fields=fields).cards
            if any(card.suspend for card in made):  # never for our note types; kept out of the memo
                raise ValueError(f"note {note.card_id!r}: genanki suspends one of its cards")
            known = card_ords[key] = ",".join(str(card.ord) for card in made)
        for ord_ in known.split(",") if known else ():
            card_rows.append((next(id_gen), note_id, deck_id, int(ord_), mod, -1, 0, 0, note.due, 0, 0, 0, 0, 0, 0, 0, 0, ""))


def _model_key(model: _Model) -> str:
    """What genanki's choice of cards depends on besides the fields: type and templates."""
    payload = json.dumps([model.model_type, model.fields, model.templates], sort_keys=True)
    return hashlib.blake2b(payload.encode(), digest_size=8).hexdigest()


def _model(notetype: NoteType, namespace: str, mod: int) -> _Model:
    key = notetype.key
    return _Model(
        notetype.model_id(namespace),
        notetype.name(namespace),
        fields=[{"name": name, "id": ids.field_id(namespace, key, field_key(name))} for name in notetype.fields],
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
    card_ords: MutableMapping[str, str] | None = None,
    counts: MutableMapping[str, int] | None = None,
) -> bytes:
    """Build the .apkg in memory and return its bytes (the caller writes them atomically).

    `card_ords`: which cards each note gets, from earlier builds; filled in for new notes.
    `counts`, if given, receives the package's number of "notes" and "cards".
    """
    card_ords = {} if card_ords is None else card_ords
    models = {key: _model(nt, namespace, notetype_mods[key]) for key, nt in notetypes.items()}
    deck_id = ids.deck_id(namespace, deck_name)
    deck = genanki.Deck(deck_id, deck_name, description=deck_description)
    for model in models.values():
        deck.add_model(model)  # ship every note type, even one no note uses yet
    timestamp = max([*notetype_mods.values(), *(n.mod for n in notes), 1])
    # In memory, not a temp file: a build writes nothing outside the project, even if killed.
    conn = sqlite3.connect(":memory:")
    try:
        cursor = conn.cursor()
        import itertools

        id_gen = itertools.count(int(timestamp) * 1000)
        # genanki writes the schema, the collection, the deck and the note types ...
        genanki.Package(deck).write_to_db(cursor, timestamp, id_gen)
        # ... and we add the notes and cards it would write, in bulk (see _note_rows).
        card_rows: list[tuple[Any, ...]] = []
        cursor.executemany(_NOTE_SQL, _note_rows(notes, models, deck_id, id_gen, card_rows, card_ords))
        cursor.executemany(_CARD_SQL, card_rows)
        if counts is not None:
            counts.update(notes=len(notes), cards=len(card_rows))
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


def _info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3
    return info


def _add(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    zf.writestr(_info(name), data)
