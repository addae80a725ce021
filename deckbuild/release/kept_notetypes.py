"""What a release promised about note types, held at every build: a note type that shipped
keeps shipping (its notes stay in learners' collections), with the fields and templates it
shipped with unless a major release says otherwise (Anki would otherwise make a duplicate
note type and stop updating the learners' notes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from deckbuild.errors import LocatedError, Location

if TYPE_CHECKING:
    from deckbuild.apkg.notetypes import NoteType
    from deckbuild.release.versioning import Snapshot


def refuse_schema_change(snapshot: Snapshot | None, notetypes: Mapping[str, NoteType]) -> None:
    """A build may not ship a released note type with other fields or templates (E501)."""
    if snapshot is None:
        return
    for key, notetype in notetypes.items():
        released = snapshot.schemas.get(key)
        if released is not None and released != notetype.schema() and not notetype.renames_in_place(released):
            raise LocatedError(
                Location(notetype.source or "deckbuild/apkg/notetypes.py"),
                "E501",
                f"note type '{key}' changed its fields or templates since release {snapshot.version}; Anki would "
                "create a duplicate note type and stop updating learners' notes. Revert it, or ship it as a major "
                "release that says so: deckbuild release --bump major --allow-schema-change",
            )


def refuse_missing_notetypes(snapshot: Snapshot | None, notetypes: Mapping[str, NoteType]) -> None:
    """A released note type must stay declared: its notes keep shipping, retired ones too (E224)."""
    if snapshot is None:
        return
    for key in sorted(set(snapshot.schemas) - set(notetypes)):
        raise LocatedError(
            Location(f"notetypes/{key}"),
            "E224",
            f"note type '{key}' shipped in release {snapshot.version} and its notes keep shipping (Anki never deletes "
            f"them, and retired ones ship as they last did); restore notetypes/{key}/ (git checkout notetypes/{key})",
        )
