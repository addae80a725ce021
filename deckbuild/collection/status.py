"""`deckbuild status`: which shipped notes a learner edited, lost or still studies retired, and
which media files their collection lacks (read-only).

Works on a private copy of the collection (or on a fresh collection the given .apkg export
is imported into), so the learner's file is never opened for writing.  The shipped text is
what the last `push` recorded in the collection; without a record (a plain import, an
exported .apkg) it is the package built from the sources.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anki.collection import Collection, ImportAnkiPackageOptions, ImportAnkiPackageRequest

from deckbuild.apkg.notetypes import PERSONAL_FIELD
from deckbuild.apkg.read import ShippedNote, media_names, read_package
from deckbuild.changeset import Changeset
from deckbuild.collection.access import check_collection, private_copy
from deckbuild.collection.against import against_collection
from deckbuild.collection.push import media_folder, read_record
from deckbuild.model import RETIRED_TAG


@dataclass(frozen=True)
class Edited:
    id: str
    fields: tuple[str, ...]
    shipped: dict[str, str]
    current: dict[str, str]


@dataclass
class StatusReport:
    source: str
    version: str | None
    edited: list[Edited] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    retired_active: list[str] = field(default_factory=list)
    suspended: int = 0
    personal: int = 0
    missing_media: list[str] = field(default_factory=list)  # files the package carries that the media folder lacks

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "version": self.version,
            "edited": [{"id": e.id, "fields": list(e.fields), "shipped": e.shipped, "current": e.current} for e in self.edited],
            "missing": self.missing,
            "retired_active": self.retired_active,
            "suspended": self.suspended,
            "personal_notes": self.personal,
            "missing_media": self.missing_media,
        }


def status(source: Path, package: Path, *, namespace: str) -> StatusReport:
    """Compare a collection (or an exported .apkg of one) with what was shipped to it."""
    with tempfile.TemporaryDirectory() as tmp:
        shipped_media = media_names(package)
        if source.suffix.lower() in {".apkg", ".colpkg"}:
            path = _imported(source, Path(tmp))
            held = shipped_media  # an export carries its media inside: there is no folder to lack them
        else:
            check_collection(source)
            path = private_copy(source, Path(tmp))
            folder = media_folder(source)
            held = tuple(name for name in shipped_media if (folder / name).is_file())
        return _status(path, package, namespace, str(source), (shipped_media, held))


def _imported(export: Path, folder: Path) -> Path:
    path = folder / "collection.anki2"
    col: Any = Collection(str(path))
    try:
        options = ImportAnkiPackageOptions(with_scheduling=True)
        col.import_anki_package(ImportAnkiPackageRequest(package_path=str(export), options=options))
    finally:
        col.close()
    return path


def _status(
    path: Path, package: Path, namespace: str, source: str, media: tuple[tuple[str, ...], tuple[str, ...]]
) -> StatusReport:
    """`media`: the package's media names, and those of them the collection has."""
    col: Any = Collection(str(path))
    try:
        record = read_record(col, namespace)
        if record is not None:
            shipped = {g: ShippedNote(g, "", dict(n["fields"]), tuple(n["tags"]), 0) for g, n in record["notes"].items()}
        else:
            shipped = dict(read_package(package))
        report = StatusReport(source, record.get("version") if record else None)
        existing = dict(col.db.all("select guid, id from notes"))
        notes = {guid: col.get_note(existing[guid]) for guid in shipped if guid in existing}
        held = {g: ([_text(notes[g], name) for name in shipped[g].fields], notes[g].tags) for g in notes}
        # What differs between what was shipped and what the collection holds, note by note.
        changeset = against_collection(shipped, held, media=media[0], media_held=media[1])
        current = {shipped[g].card_id: {n: str(notes[g][n]) for n in list(notes[g].keys())} for g in notes}
        report.edited, report.missing, report.missing_media = from_changeset(changeset, shipped, current)
        for guid, note in sorted(notes.items(), key=lambda item: shipped[item[0]].card_id):
            if PERSONAL_FIELD in list(note.keys()) and note[PERSONAL_FIELD].strip():
                report.personal += 1
            cards = note.cards()
            report.suspended += sum(1 for c in cards if c.queue == -1)
            if RETIRED_TAG in shipped[guid].tags and any(c.queue != -1 for c in cards):
                report.retired_active.append(shipped[guid].card_id)
    finally:
        col.close()
    return report


def from_changeset(
    changeset: Changeset, shipped: Mapping[str, ShippedNote], current: Mapping[str, Mapping[str, str]]
) -> tuple[list[Edited], list[str], list[str]]:
    """Status's three lists from the changeset of what was shipped against the collection: the
    edited notes (the fields the learner changed, My notes aside), the shipped notes the
    collection lacks, and the media files it lacks.  `shipped`: by GUID; `current`: the
    learner's fields by card id."""
    by_id = {n.card_id: n for n in shipped.values()}
    edited = []
    for change in changeset.of_kind("changed", "retired", "restored", "still_retired"):
        note, now = by_id[change.card_id], current.get(change.card_id, {})
        names = tuple(n for n in change.fields if n != PERSONAL_FIELD and n in now and n in note.fields)
        if names:
            edited.append(Edited(change.card_id, names, {n: note.fields[n] for n in names}, {n: now[n] for n in names}))
    return edited, [c.card_id for c in changeset.of_kind("added")], list(changeset.media_added)


def _text(note: Any, name: str) -> str:
    """A field of the learner's note; "" for one its note type lacks (a note type that conflicts)."""
    return str(note[name]) if name in list(note.keys()) else ""
