"""`deckbuild status`: which shipped notes a learner edited, lost or still studies retired, and
which media files their collection lacks (read-only).

Works on a private copy of the collection (or on a fresh collection the given .apkg export
is imported into), so the learner's file is never opened for writing.  The shipped text is
what the last `push` recorded in the collection; without a record (a plain import, an
exported .apkg) it is the package built from the sources.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anki.collection import Collection, ImportAnkiPackageOptions, ImportAnkiPackageRequest

from deckbuild.apkg.notetypes import PERSONAL_FIELD
from deckbuild.apkg.read import media_names, read_package
from deckbuild.collection.access import check_collection, private_copy
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
        if source.suffix.lower() in {".apkg", ".colpkg"}:
            path = _imported(source, Path(tmp))
            media: list[str] = []  # an export carries its media inside: there is no folder to lack them
        else:
            check_collection(source)
            path = private_copy(source, Path(tmp))
            folder = media_folder(source)
            media = [name for name in media_names(package) if not (folder / name).is_file()]
        report = _status(path, package, namespace, str(source))
        report.missing_media = media
        return report


def _imported(export: Path, folder: Path) -> Path:
    path = folder / "collection.anki2"
    col: Any = Collection(str(path))
    try:
        options = ImportAnkiPackageOptions(with_scheduling=True)
        col.import_anki_package(ImportAnkiPackageRequest(package_path=str(export), options=options))
    finally:
        col.close()
    return path


def _status(path: Path, package: Path, namespace: str, source: str) -> StatusReport:
    col: Any = Collection(str(path))
    try:
        record = read_record(col, namespace)
        if record is not None:
            shipped = {g: (n["fields"], n["tags"]) for g, n in record["notes"].items()}
        else:
            shipped = {g: (n.fields, list(n.tags)) for g, n in read_package(package).items()}
        report = StatusReport(source, record.get("version") if record else None)
        existing = dict(col.db.all("select guid, id from notes"))
        for guid, (fields, tags) in sorted(shipped.items(), key=lambda item: item[1][0].get("CardId", item[0])):
            card_id = fields.get("CardId", guid)
            if guid not in existing:
                report.missing.append(card_id)
                continue
            note = col.get_note(existing[guid])
            changed = tuple(n for n in list(note.keys()) if n != PERSONAL_FIELD and n in fields and note[n] != fields[n])
            if changed:
                report.edited.append(Edited(card_id, changed, {n: fields[n] for n in changed}, {n: note[n] for n in changed}))
            if PERSONAL_FIELD in list(note.keys()) and note[PERSONAL_FIELD].strip():
                report.personal += 1
            cards = note.cards()
            report.suspended += sum(1 for c in cards if c.queue == -1)
            if RETIRED_TAG in tags and any(c.queue != -1 for c in cards):
                report.retired_active.append(card_id)
    finally:
        col.close()
    return report
