"""`deckbuild push`: bring a package into a learner's collection, keeping everything of theirs.

First gather (check the collection, read the package and the last push's record, work out
per note what the sources changed and what the learner changed), then write: a backup,
Anki's own importer for new notes and note types (updating no existing note), our updates of
exactly the notes the sources changed, the moves of notes the sources put in another deck,
and the record of this push.  `dry_run` runs the same on a private copy, so the learner's
file is never opened for writing.

Anki's importer leaves an existing card in its deck when the package ships its note in
another one (a renamed deck, a new subdeck, a variant).  So when the deck a note ships in
differs from the one the last push recorded for it, push moves the learner's cards of that
note from the old deck to the new one (scheduling and history go with the cards); a card the
learner moved to a deck of their own stays where they put it.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deckbuild.apkg.notetypes import PERSONAL_FIELD
from deckbuild.collection.access import check_collection, private_copy
from deckbuild.collection.package import ShippedNote, read_package
from deckbuild.model import RETIRED_TAG

RECORD_KEY = "deckbuild"
"""The collection config key holding, per deck namespace, what deckbuild last pushed."""


@dataclass(frozen=True)
class Overwritten:
    id: str
    fields: tuple[str, ...]


@dataclass(frozen=True)
class Moved:
    id: str
    old: str
    new: str
    cards: int


@dataclass
class PushReport:
    collection: str
    version: str
    dry_run: bool
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    retired: int = 0
    conflicting: int = 0
    overwritten: list[Overwritten] = field(default_factory=list)
    moved: list[Moved] = field(default_factory=list)
    backup: str | None = None
    full_sync: bool = False
    previous_version: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "version": self.version,
            "previous_version": self.previous_version,
            "dry_run": self.dry_run,
            "new": self.new,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "retired": self.retired,
            "conflicting": self.conflicting,
            "overwritten": [{"id": o.id, "fields": list(o.fields)} for o in self.overwritten],
            "moved": [{"id": m.id, "from": m.old, "to": m.new, "cards": m.cards} for m in self.moved],
            "backup": self.backup,
            "full_sync": self.full_sync,
        }


def read_record(col: Any, namespace: str) -> dict[str, Any] | None:
    """What the last push of this deck recorded in the collection, or None."""
    records = col.get_config(RECORD_KEY, {}) or {}
    record = records.get(namespace)
    return record if isinstance(record, dict) else None


def push(collection: Path, package: Path, *, namespace: str, version: str, dry_run: bool = False) -> PushReport:
    """Push `package` into `collection` (see the module docstring); returns what happened."""
    check_collection(collection)
    if dry_run:
        with tempfile.TemporaryDirectory() as tmp:
            report = _push(private_copy(collection, Path(tmp)), package, namespace, version, backup=False)
        report.collection, report.dry_run, report.backup = str(collection), True, None
        return report
    return _push(collection, package, namespace, version, backup=True)


def _push(path: Path, package: Path, namespace: str, version: str, *, backup: bool) -> PushReport:
    from anki.collection import Collection, ImportAnkiPackageOptions, ImportAnkiPackageRequest
    from anki.import_export_pb2 import ImportAnkiPackageUpdateCondition as Update

    shipped = read_package(package)
    report = PushReport(str(path), version, dry_run=False)
    col: Any = Collection(str(path))
    try:
        record = read_record(col, namespace)
        report.previous_version = record.get("version") if record else None
        baseline: dict[str, Any] = record.get("notes", {}) if record else {}
        existing = dict(col.db.all("select guid, id from notes"))
        schema_before = col.db.scalar("select scm from col")

        # Gather: which existing notes the sources changed, and what of each the learner changed.
        plan: list[tuple[ShippedNote, int, dict[str, Any] | None]] = []
        moves: list[tuple[ShippedNote, int, str]] = []
        for guid, note in shipped.items():
            if guid not in existing:
                continue
            current = col.get_note(existing[guid])
            shipped_before = baseline.get(guid)
            old_deck = shipped_before.get("deck") if shipped_before is not None else None
            if isinstance(old_deck, str) and old_deck and note.deck and old_deck != note.deck:
                moves.append((note, existing[guid], old_deck))
            if shipped_before is not None:
                changed = _content(shipped_before["fields"], shipped_before["tags"]) != _content(note.fields, note.tags)
            else:  # no record (the learner imported a plain .apkg): the note's own mod tells
                changed = note.mod > current.mod
            if changed:
                plan.append((note, existing[guid], shipped_before))
            else:
                report.unchanged += 1
            if RETIRED_TAG in note.tags and not all(c.queue == -1 for c in current.cards()):
                report.retired += 1

        # Write: first a backup, with Anki's own backup (a .colpkg beside the profile's others).
        if backup:
            report.backup = _backup(col, path)
        # New notes and note types through Anki's importer, which updates no existing note.
        options = ImportAnkiPackageOptions(
            update_notes=Update.IMPORT_ANKI_PACKAGE_UPDATE_CONDITION_NEVER,
            update_notetypes=Update.IMPORT_ANKI_PACKAGE_UPDATE_CONDITION_IF_NEWER,
            merge_notetypes=False,
            with_scheduling=False,
            with_deck_configs=False,
        )
        log = col.import_anki_package(ImportAnkiPackageRequest(package_path=str(package), options=options)).log
        col.models._clear_cache()
        report.new = len(log.new)
        report.conflicting = len(log.conflicting)
        # Then exactly the notes the sources changed: their fields and tags, keeping the learner's.
        for note, note_id, shipped_before in plan:
            current = col.get_note(note_id)
            names = list(current.keys())
            if [n for n in names if n != PERSONAL_FIELD] != [n for n in note.fields if n != PERSONAL_FIELD]:
                report.conflicting += 1  # the note's type is not the shipped one: Anki's import could not update it
                continue
            if shipped_before is not None:
                learner_edits = tuple(
                    n for n in names if n != PERSONAL_FIELD and current[n] != shipped_before["fields"].get(n, current[n])
                )
                learner_tags = [t for t in current.tags if t not in set(shipped_before["tags"])]
            else:
                learner_edits = ()
                learner_tags = [t for t in current.tags if t not in set(note.tags)]
            sources_changed = {n for n in names if shipped_before is None or shipped_before["fields"].get(n) != note.fields[n]}
            overwritten = tuple(n for n in learner_edits if n in sources_changed)
            if overwritten:
                report.overwritten.append(Overwritten(note.card_id, overwritten))
            for name in names:
                if name != PERSONAL_FIELD and (name in sources_changed or name in overwritten):
                    current[name] = note.fields[name]
            current.tags = sorted(set(note.tags) | set(learner_tags))
            col.update_note(current)
            report.updated += 1
        # Then the notes the sources moved to another deck: their cards still in the old one follow.
        for note, note_id, old_deck in moves:
            old_id = col.decks.id_for_name(old_deck)
            cards = [c.id for c in col.get_note(note_id).cards() if old_id is not None and c.did == old_id]
            if cards:
                col.set_deck(cards, col.decks.id(note.deck))
                report.moved.append(Moved(note.card_id, old_deck, note.deck, len(cards)))

        # Last, what this push shipped: the next push and `status` compare against it.
        records = dict(col.get_config(RECORD_KEY, {}) or {})
        records[namespace] = {
            "version": version,
            "package": package.name,
            "sha256": hashlib.sha256(package.read_bytes()).hexdigest(),
            "pushed_at": int(time.time()),
            "notes": {g: {"fields": n.fields, "tags": list(n.tags), "deck": n.deck} for g, n in shipped.items()},
        }
        col.set_config(RECORD_KEY, records)
        report.full_sync = col.db.scalar("select scm from col") != schema_before
    finally:
        col.close()
    return report


def _content(fields: dict[str, str], tags: Any) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """What decides whether the sources changed a note: its fields (not the learner's) and tags."""
    return tuple(sorted((k, v) for k, v in fields.items() if k != PERSONAL_FIELD)), tuple(sorted(tags))


def _backup(col: Any, path: Path) -> str:
    """Anki's own backup (a .colpkg, restorable from Anki's File menu) in the profile's backups/ folder."""
    folder = path.parent / "backups"
    folder.mkdir(exist_ok=True)
    col.create_backup(backup_folder=str(folder), force=True, wait_for_completion=True)
    # Named by the minute or second; a second backup in the same second replaces the first.
    return str(max(folder.glob("*.colpkg"), key=lambda p: (p.stat().st_mtime_ns, p.name)))
