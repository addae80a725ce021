"""`adopt --ids-from PACKAGE`: the note-type identity learners' collections already have.

Anki updates a note on import only if the note type it arrives with has the id of the one
the collection's note has (else the note is "conflicting", never updated), and it takes an
incoming note type for its own only if the field names and template names, in order, are
the same (else it adds a second note type, `Name+`).  A CrowdAnki folder carries no
note-type ids, so adopt takes them, and the field and template ids that let a later rename
update in place, from a package exported from a collection that has the deck (or from
that collection itself).  Each adopted note type is matched through its notes' GUIDs, or,
when none of them is there, by name; a schema that differs is refused, since its notes
would conflict anyway.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckbuild.adopt.model import SourceDeck, SourceNotetype
from deckbuild.adopt.package import imported, read_notetypes
from deckbuild.errors import LocatedError, Location, Problem

_SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class KnownIds:
    """What a collection that has the deck says about identity: its note types and each note's."""

    source: str
    notetypes: tuple[SourceNotetype, ...]
    notetype_of: Mapping[str, str]  # note GUID -> SourceNotetype.key


def read_ids(path: Path) -> KnownIds:
    """The note types and notes' note types of an .apkg or an Anki collection file (E292 if neither)."""
    where = Location(str(path))
    if not path.is_file():
        raise LocatedError(where, "E292", "--ids-from: no such file; expected an .apkg or an Anki collection (collection.anki2)")
    if zipfile.is_zipfile(path):
        with imported(path) as col:
            return _known(col, str(path))
    with open(path, "rb") as handle:
        if handle.read(len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:
            raise LocatedError(
                where, "E292", "--ids-from: expected an .apkg (a zip) or an Anki collection (an SQLite file); found neither"
            )
    # A copy: the learner's collection is only read, never opened by Anki's backend (which may upgrade it).
    with tempfile.TemporaryDirectory(prefix="deckbuild-adopt-ids-") as tmp:
        copy = Path(tmp) / "collection.anki2"
        shutil.copyfile(path, copy)
        wal = path.with_name(path.name + "-wal")
        if wal.is_file():  # changes Anki has not yet written into the file itself
            shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
        from anki.collection import Collection

        try:
            col = Collection(str(copy))
        except Exception as exc:  # the backend's errors all mean: not a collection it can open
            raise LocatedError(where, "E292", f"--ids-from: Anki cannot open this collection: {exc}") from None
        try:
            return _known(col, str(path))
        finally:
            col.close()


def _known(col: Any, source: str) -> KnownIds:
    notetype_of = {str(guid): str(mid) for guid, mid in col.db.all("select guid, mid from notes")}
    return KnownIds(source, tuple(read_notetypes(col)), notetype_of)


def take_ids(deck: SourceDeck, known: KnownIds) -> tuple[SourceDeck, list[Problem]]:
    """`deck` with each note type's id, field ids, template ids and mod from `known`; E293-E295."""
    where = Location(known.source)
    problems: list[Problem] = []
    by_key = {nt.key: nt for nt in known.notetypes}
    replaced = []
    for notetype in deck.notetypes:
        guids = [note.guid for note in deck.notes if note.notetype == notetype.key]
        if not guids:
            replaced.append(notetype)
            continue
        there = sorted({known.notetype_of[guid] for guid in guids if guid in known.notetype_of})
        if len(there) > 1:
            names = ", ".join(repr(by_key[key].name) for key in there)
            problems.append(
                Problem(
                    where,
                    "E294",
                    f"the notes of note type {notetype.name!r} belong to {len(there)} note types here ({names}); "
                    "one adopted note type cannot update them all. Adopt each part separately",
                )
            )
            continue
        # No note of it there: a note type of its name and schema is the one its notes would join.
        named = None if there else _by_name(notetype, known.notetypes)
        match = by_key[there[0]] if there else named if named and not _schema_difference(notetype, named) else None
        if match is None:
            problems.append(
                Problem(
                    where,
                    "E295",
                    f"note type {notetype.name!r}: none of its {len(guids)} notes and no note type of that name and "
                    "those fields and templates is here, so it keeps ids of its own (its notes are new to this collection)",
                    "warning",
                )
            )
            replaced.append(notetype)
            continue
        why = _schema_difference(notetype, match)
        if why is not None:
            problems.append(
                Problem(
                    where,
                    "E293",
                    f"note type {notetype.name!r}: {why}; Anki would add a second note type and leave every note "
                    f"of it un-updated. Adopt a source of the same version as this {_what(known.source)}",
                )
            )
            continue
        replaced.append(
            dataclasses.replace(
                notetype,
                id=match.id,
                field_ids=match.field_ids,
                templates=tuple(
                    dataclasses.replace(mine, id=theirs.id)
                    for mine, theirs in zip(notetype.templates, match.templates, strict=True)
                ),
                mod=match.mod,
            )
        )
    return dataclasses.replace(deck, notetypes=tuple(replaced)), problems


def _by_name(notetype: SourceNotetype, candidates: tuple[SourceNotetype, ...]) -> SourceNotetype | None:
    named = [nt for nt in candidates if nt.name == notetype.name]
    return named[0] if len(named) == 1 else None


def _schema_difference(mine: SourceNotetype, theirs: SourceNotetype) -> str | None:
    """What makes Anki take `mine` for another note type than `theirs` (None: the same schema)."""
    if mine.cloze != theirs.cloze:
        kind = {True: "a cloze type", False: "a standard type"}
        return f"it is {kind[theirs.cloze]} here and {kind[mine.cloze]} in the source"
    if mine.fields != theirs.fields:
        return f"fields: expected {list(theirs.fields)} (as here), the source has {list(mine.fields)}"
    names, their_names = [t.name for t in mine.templates], [t.name for t in theirs.templates]
    if names != their_names:
        return f"templates: expected {their_names} (as here), the source has {names}"
    return None


def _what(source: str) -> str:
    return "package" if source.lower().endswith(".apkg") else "collection"
