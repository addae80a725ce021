"""`deckbuild push`: bring a package into a learner's collection, keeping everything of theirs.

A push is a plan and one apply.  `plan_push` reads a private copy of the collection and
works out, without writing, everything the push will do: the notes to add, each existing
note's fields (per field: the author's change, the learner's change kept, or the learner's
change overwritten) and tags, the cards to move to another deck, the media files to
deliver.  `apply_push` then writes it into the learner's file: a backup (Anki's own), the
media through Anki's media API (so its media database knows them), then every note change in
one collection transaction (Anki's importer for new notes and note types, our field and tag
updates, the moves, the record of this push); if that transaction fails, the media it added
are removed again.  A dry run is the plan alone.

What the learner changed is read against the record of the last push (the exact text it
shipped).  Without one (the deck came in by a plain import, or the full deck after only a
variant was pushed) the baseline is every version the project's releases shipped: a field
holding any of those texts is the author's, any other text is the learner's.

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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from anki.collection import Collection, ImportAnkiPackageOptions, ImportAnkiPackageRequest
from anki.import_export_pb2 import ImportAnkiPackageUpdateCondition

from deckbuild.apkg.notetypes import PERSONAL_FIELD
from deckbuild.apkg.read import ShippedNote, media_names, read_media, read_package
from deckbuild.changeset import Changeset
from deckbuild.collection.access import check_collection, private_copy
from deckbuild.collection.against import against_collection
from deckbuild.collection.shipped import Version
from deckbuild.model import RETIRED_TAG
from deckbuild.writer import make_folder

RECORD_KEY = "deckbuild"
"""The collection config key holding, per deck namespace, what deckbuild last pushed."""

PREVIEW = 80
"""How much of an overwritten text the report shows (the whole text is in the backup)."""

Change = Literal["author", "kept", "overwritten"]


@dataclass(frozen=True)
class FieldChange:
    """One field of an updated note: whose change it is, and the learner's text where theirs."""

    id: str  # the card id (the note's CardId field)
    field: str
    change: Change
    learner_text: str = ""  # the learner's whole text, for "kept" and "overwritten"
    certain: bool = True  # False: no record of what was shipped, so the text may be an old build's


@dataclass(frozen=True)
class NoteUpdate:
    note_id: int
    id: str
    fields: Mapping[int, str]  # field index -> the text to write
    tags: tuple[str, ...]
    changes: tuple[FieldChange, ...]


@dataclass(frozen=True)
class Moved:
    id: str
    old: str
    new: str
    cards: int


@dataclass(frozen=True)
class _Move:
    moved: Moved
    card_ids: tuple[int, ...]


@dataclass(frozen=True)
class PushPlan:
    """Everything a push will do to one collection, computed without writing to it."""

    collection: Path
    package: Path
    namespace: str  # the key of this deck's (or variant's) record in the collection
    # The package against the collection (against.py): its added notes are the ones Anki's
    # importer will add, its media_added the files the collection's media folder lacks.
    changeset: Changeset
    updates: tuple[NoteUpdate, ...]
    unchanged: int
    conflicting: tuple[str, ...]  # notes of another note type: neither Anki nor push can update them
    retired: tuple[str, ...]  # retired notes whose cards the learner still studies
    moves: tuple[_Move, ...]
    record: Mapping[str, Any]  # what this push records in the collection (the next push's baseline)
    previous_version: str | None

    @property
    def new(self) -> tuple[str, ...]:
        """Card ids of the notes Anki's importer will add."""
        return tuple(c.card_id for c in self.changeset.of_kind("added"))

    @property
    def media(self) -> tuple[str, ...]:
        """The files the collection's media folder lacks, which the package carries."""
        return self.changeset.media_added


@dataclass(frozen=True)
class Overwritten:
    id: str
    field: str
    learner_text: str  # its first PREVIEW characters
    length: int  # of the whole text
    certain: bool = True


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
    kept: list[tuple[str, str]] = field(default_factory=list)  # (card id, field): the learner's change kept
    author: int = 0  # fields that take the author's change
    moved: list[Moved] = field(default_factory=list)
    media: list[str] = field(default_factory=list)
    backup: str | None = None
    backup_folder: str = ""
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
            "author_fields": self.author,
            "overwritten": [
                {
                    "id": o.id,
                    "field": o.field,
                    "learner_text": o.learner_text,
                    "length": o.length,
                    "certain": o.certain,
                    "whole_text_in": self.backup,
                }
                for o in self.overwritten
            ],
            "kept": [{"id": card_id, "field": name} for card_id, name in self.kept],
            "moved": [{"id": m.id, "from": m.old, "to": m.new, "cards": m.cards} for m in self.moved],
            "media": self.media,
            "backup": self.backup,
            "backup_folder": self.backup_folder,
            "full_sync": self.full_sync,
        }


def read_record(col: Any, namespace: str) -> dict[str, Any] | None:
    """What the last push of this deck recorded in the collection, or None."""
    records = col.get_config(RECORD_KEY, {}) or {}
    record = records.get(namespace)
    return record if isinstance(record, dict) else None


def media_folder(collection: Path) -> Path:
    """The media folder Anki keeps beside a collection file (collection.anki2 -> collection.media)."""
    return collection.with_suffix(".media")


def backup_folder(collection: Path) -> Path:
    """Where push puts its backup: the `backups/` folder beside the collection file (a profile's own)."""
    return collection.parent / "backups"


def push(
    collection: Path,
    package: Path,
    *,
    namespace: str,
    version: str,
    released: Mapping[str, tuple[Version, ...]] | None = None,
    dry_run: bool = False,
) -> PushReport:
    """Push `package` into `collection` (see the module docstring); returns what happened, or
    for a dry run what would happen."""
    check_collection(collection)
    planned = plan_push(collection, package, namespace=namespace, version=version, released=released or {})
    if dry_run:
        return report_of(planned, version, dry_run=True)
    return apply_push(planned, version)


def plan_push(
    collection: Path, package: Path, *, namespace: str, version: str, released: Mapping[str, tuple[Version, ...]]
) -> PushPlan:
    """Everything the push will do, read from a private copy of the (checked) collection."""
    shipped = read_package(package)
    folder = media_folder(collection)
    with tempfile.TemporaryDirectory() as tmp:
        col: Any = Collection(str(private_copy(collection, Path(tmp))))
        try:
            record = read_record(col, namespace)
            baseline: dict[str, Any] = record.get("notes", {}) if record else {}
            existing = dict(col.db.all("select guid, id from notes"))
            notes = {guid: col.get_note(existing[guid]) for guid in shipped if guid in existing}
            package_media = media_names(package)
            changeset = against_collection(
                shipped,
                {guid: (note.fields, note.tags) for guid, note in notes.items()},
                media=package_media,
                media_held=[name for name in package_media if (folder / name).is_file()],
            )
            differ = {c.card_id for c in changeset.notes if c.kind != "added"}
            updates: list[NoteUpdate] = []
            conflicting: list[str] = []
            retired: list[str] = []
            moves: list[_Move] = []
            unchanged = 0
            for guid, note in shipped.items():
                current = notes.get(guid)
                if current is None:  # new: the changeset's added notes
                    continue
                if RETIRED_TAG in note.tags and not all(c.queue == -1 for c in current.cards()):
                    retired.append(note.card_id)
                before = baseline.get(guid)
                move = _move(col, note, current, before)
                if move is not None:
                    moves.append(move)
                if current.mid != note.notetype_id or len(current.fields) != len(note.fields):
                    conflicting.append(note.card_id)
                    continue
                update = _update(note, current, before, released.get(guid, ())) if note.card_id in differ else None
                if update is None:
                    unchanged += 1
                else:
                    updates.append(update)
        finally:
            col.close()
    return PushPlan(
        collection=collection,
        package=package,
        namespace=namespace,
        changeset=changeset,
        updates=tuple(updates),
        unchanged=unchanged,
        conflicting=tuple(conflicting),
        retired=tuple(retired),
        moves=tuple(moves),
        record={
            "version": version,
            "package": package.name,
            "sha256": hashlib.sha256(package.read_bytes()).hexdigest(),
            "notes": {g: {"fields": n.fields, "tags": list(n.tags), "deck": n.deck} for g, n in shipped.items()},
        },
        previous_version=record.get("version") if record else None,
    )


def _update(
    note: ShippedNote, current: Any, before: Mapping[str, Any] | None, versions: tuple[Version, ...]
) -> NoteUpdate | None:
    """What push writes into one existing note, field by field, or None if nothing.

    Per field (never My notes): the same text on both sides: nothing; only the author changed
    it: the author's text; only the learner: theirs stays ("kept"); both: the author's text,
    and the learner's is named in the report ("overwritten") and kept in the backup.
    """
    names = list(note.fields)
    writes: dict[int, str] = {}
    changes: list[FieldChange] = []
    for index, name in enumerate(names):
        if name == PERSONAL_FIELD:
            continue
        theirs, ours = str(current.fields[index]), note.fields[name]
        if theirs == ours:
            continue
        change, certain = _whose(name, theirs, ours, before, versions)
        if change != "kept":
            writes[index] = ours
        changes.append(FieldChange(note.card_id, name, change, "" if change == "author" else theirs, certain))
    tags = _tags(note, list(current.tags), before, versions)
    if not writes and sorted(current.tags) == list(tags):
        return None
    return NoteUpdate(int(current.id), note.card_id, writes, tags, tuple(changes))


def _whose(
    name: str, theirs: str, ours: str, before: Mapping[str, Any] | None, versions: tuple[Version, ...]
) -> tuple[Change, bool]:
    """Whose change a field's differing text is (the collection holds `theirs`, the package `ours`),
    and whether push can be sure of it."""
    if before is not None:  # the record of the last push: exactly what the learner got
        shipped = before.get("fields", {}).get(name)
        if shipped is None:  # a field the last push did not ship: the learner could not have typed into it
            return ("author", True) if theirs == "" else ("overwritten", True)
        if theirs == shipped:
            return "author", True
        return ("overwritten", True) if ours != shipped else ("kept", True)
    texts = [v.fields[name] for v in versions if name in v.fields]
    if theirs in texts:  # an earlier release's text: the learner did not touch it
        return "author", True
    if texts and all(text == ours for text in texts):  # the author never changed this field: the text is theirs
        return "kept", True
    # The learner's text, and the author changed the field in some release (or the project has
    # no release to tell: then it may also be an unreleased build's text).
    return "overwritten", bool(texts)


def _tags(
    note: ShippedNote, current: list[str], before: Mapping[str, Any] | None, versions: tuple[Version, ...]
) -> tuple[str, ...]:
    """The shipped tags, plus every tag of the learner's (one the deck never shipped: marked, leech, theirs)."""
    if before is not None:
        deck_tags = set(before.get("tags", []))
    else:
        deck_tags = {t for v in versions for t in v.tags} | set(note.tags)
    return tuple(sorted(set(note.tags) | {t for t in current if t not in deck_tags}))


def _move(col: Any, note: ShippedNote, current: Any, before: Mapping[str, Any] | None) -> _Move | None:
    """The learner's cards of a note still in the deck the last push shipped it in, if it ships in another now."""
    old = before.get("deck") if before is not None else None
    if not isinstance(old, str) or not old or not note.deck or old == note.deck:
        return None
    old_id = col.decks.id_for_name(old)
    cards = tuple(int(c.id) for c in current.cards() if old_id is not None and c.did == old_id)
    return _Move(Moved(note.card_id, old, note.deck, len(cards)), cards) if cards else None


def report_of(planned: PushPlan, version: str, *, dry_run: bool) -> PushReport:
    """The report of a plan: what the push did, or (dry run) would do."""
    report = PushReport(str(planned.collection), version, dry_run, previous_version=planned.previous_version)
    report.new = len(planned.new)
    report.updated = len(planned.updates)
    report.unchanged = planned.unchanged
    report.retired = len(planned.retired)
    report.conflicting = len(planned.conflicting)
    for update in planned.updates:
        for change in update.changes:
            if change.change == "overwritten":
                text = change.learner_text
                report.overwritten.append(Overwritten(change.id, change.field, text[:PREVIEW], len(text), change.certain))
            elif change.change == "kept":
                report.kept.append((change.id, change.field))
            else:
                report.author += 1
    report.moved = [m.moved for m in planned.moves]
    report.media = list(planned.media)
    report.backup_folder = str(backup_folder(planned.collection))
    return report


def apply_push(planned: PushPlan, version: str) -> PushReport:
    """Write the plan into the learner's collection: backup, media, one transaction of note changes."""
    report = report_of(planned, version, dry_run=False)
    col: Any = Collection(str(planned.collection))
    try:
        schema_before = col.db.scalar("select scm from col")
        report.backup = _backup(col, planned.collection)
        # Media first, through Anki's media API, so that its media database knows every file.
        data = read_media(planned.package, planned.media)
        added: list[str] = []
        try:
            for name in planned.media:
                stored = col.media.write_data(name, data[name])
                added.append(stored)
                if stored != name:
                    raise RuntimeError(f"Anki stored media file {name!r} as {stored!r}")
            logs: list[Any] = []
            col.db.transact(lambda: logs.append(_notes(col, planned)))
        except BaseException:
            if added:
                col.media.trash_files(added)
            raise
        report.new = len(logs[0].new)  # what Anki's importer added, rather than what the plan expected
        report.full_sync = col.db.scalar("select scm from col") != schema_before
    finally:
        col.close()
    return report


def _notes(col: Any, planned: PushPlan) -> Any:
    """Every note change of the plan (run inside one collection transaction); returns the importer's log."""
    # New notes and note types through Anki's importer, which here updates no existing note.
    update = ImportAnkiPackageUpdateCondition
    options = ImportAnkiPackageOptions(
        update_notes=update.IMPORT_ANKI_PACKAGE_UPDATE_CONDITION_NEVER,
        update_notetypes=update.IMPORT_ANKI_PACKAGE_UPDATE_CONDITION_IF_NEWER,
        merge_notetypes=False,
        with_scheduling=False,
        with_deck_configs=False,
    )
    log = col.import_anki_package(ImportAnkiPackageRequest(package_path=str(planned.package), options=options)).log
    col.models._clear_cache()
    # Then the fields and tags of the notes the plan updates, in one call.
    notes = []
    for item in planned.updates:
        note = col.get_note(item.note_id)
        for index, text in item.fields.items():
            note.fields[index] = text
        note.tags = list(item.tags)
        notes.append(note)
    if notes:
        col.update_notes(notes)
    # Then the cards of notes the sources moved to another deck.
    for move in planned.moves:
        col.set_deck(list(move.card_ids), col.decks.id(move.moved.new))
    # Last, what this push shipped: the next push and `status` compare against it.
    records = dict(col.get_config(RECORD_KEY, {}) or {})
    records[planned.namespace] = {**planned.record, "pushed_at": int(time.time())}
    col.set_config(RECORD_KEY, records)
    return log


def _backup(col: Any, path: Path) -> str:
    """Anki's own backup (a .colpkg, restorable from Anki's File menu) in the backups/ folder beside the collection."""
    folder = backup_folder(path)
    make_folder(folder)
    col.create_backup(backup_folder=str(folder), force=True, wait_for_completion=True)
    # Named by the minute or second; a second backup in the same second replaces the first.
    return str(max(folder.glob("*.colpkg"), key=lambda p: (p.stat().st_mtime_ns, p.name)))
