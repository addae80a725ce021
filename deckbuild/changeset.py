"""What changed: a Plan compared with what was last built, as one frozen Changeset.

The plan says what the package *is*; the changeset says what is new in it.  It is computed
by one pure function from the plan and a Baseline (the build record the plan read and the
last release's snapshot), so every command that reports a difference (the build line, a
release, push, status, the preview) reads the same answer instead of working it out again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from deckbuild.model import RETIRED_TAG, RenderedNote
from deckbuild.plan_result import Plan

if TYPE_CHECKING:  # types only: an up-to-date build prints its line without loading the release stages
    from deckbuild.release.record import Record, Stamp
    from deckbuild.release.versioning import PublishedNote, Snapshot

NoteKind = Literal["added", "changed", "retired", "renamed"]


@dataclass(frozen=True)
class NoteChange:
    """One note the package ships differently from the baseline."""

    card_id: str
    kind: NoteKind
    # The names of the fields whose HTML changed; () when the baseline does not know the old
    # fields (only their hash), or for an added note.
    fields: tuple[str, ...] = ()
    tags: bool = False  # its tags changed (known only where the old fields are)
    media: tuple[str, ...] = ()  # the media the note names now
    previous: str = ""  # a renamed note's old id


@dataclass(frozen=True)
class Changeset:
    """Every difference between a plan and its baseline; empty when nothing changed."""

    notes: tuple[NoteChange, ...] = ()  # sorted by card id
    # Notes the baseline shipped live that the sources no longer have (a release retires them).
    leaving: tuple[str, ...] = ()
    moved: tuple[tuple[str, str, str], ...] = ()  # (card id, subdeck before, subdeck now)
    media_added: tuple[str, ...] = ()
    media_replaced: tuple[str, ...] = ()
    media_dropped: tuple[str, ...] = ()
    notetypes: tuple[str, ...] = ()  # note types whose fields, templates or CSS changed
    files: tuple[Path, ...] = ()  # the files whose bytes the plan would change, in write order

    def of_kind(self, kind: NoteKind) -> tuple[NoteChange, ...]:
        return tuple(n for n in self.notes if n.kind == kind)

    @property
    def empty(self) -> bool:
        return not (
            self.notes
            or self.leaving
            or self.moved
            or self.media_added
            or self.media_replaced
            or self.media_dropped
            or self.notetypes
        )


@dataclass(frozen=True)
class Baseline:
    """What was last built: each note's stamp, the old content where known, note types, media."""

    stamps: Mapping[str, Stamp] = field(default_factory=dict)
    notes: Mapping[str, PublishedNote] = field(default_factory=dict)  # old fields, tags and deck, where known
    notetypes: Mapping[str, str] = field(default_factory=dict)  # key -> content hash
    media: Mapping[str, str] = field(default_factory=dict)  # hand-made images: name -> sha256


def baseline(record: Record | None, snapshot: Snapshot | None) -> Baseline:
    """The last build as the record tells it, with the old content of every note the last
    release shipped unchanged since (a note's hash fixes its fields, so the snapshot's are its).

    The record remembers every image that ever shipped; an image counts as shipped last time
    when the last release carried it or it is still in use (so a long-dropped one is not
    reported dropped again on every build)."""
    if record is None:
        return Baseline()
    from deckbuild.release.identity import MEDIA_KEY

    known = {}
    if snapshot is not None:
        known = {k: n for k, n in snapshot.notes.items() if (s := record.notes.get(k)) is not None and s.hash == n.hash}
    table = record.extra.get(MEDIA_KEY) or {}
    media = {
        str(v["name"]): str(v["hash"])
        for v in (table.values() if isinstance(table, Mapping) else ())
        if isinstance(v, Mapping) and "name" in v and "hash" in v
    }
    if snapshot is not None:
        media = {k: v for k, v in media.items() if k in snapshot.media}
    return Baseline(record.notes, known, {k: s.hash for k, s in record.notetypes.items()}, media)


def changes(plan: Plan, base: Baseline) -> Changeset:
    """What `plan` ships that `base` did not, or ships differently: pure, reads no file."""
    current = {s.note.card_id: s.note for s in plan.notes}
    notes: list[NoteChange] = []
    for card_id in sorted(current):
        note = current[card_id]
        entry = _note_change(note, base, plan)
        if entry is not None:
            notes.append(entry)
    claimed = {p for n in current.values() for p in n.previous_ids}
    guids = {n.guid for n in current.values()}
    leaving = tuple(
        k
        for k, n in sorted(base.notes.items())
        if not n.retired and k not in current and k not in claimed and n.guid not in guids
    )
    by_guid = {n.guid: n for n in base.notes.values() if not n.retired}
    moved = tuple(
        (k, old.deck, n.deck)
        for k, n in sorted(current.items())
        if (old := by_guid.get(n.guid)) is not None and old.deck != n.deck and RETIRED_TAG not in n.tags
    )
    media_now = _media(plan)
    added = tuple(sorted(m for m in media_now if m not in base.media))
    replaced = tuple(sorted(m for m, h in media_now.items() if m in base.media and base.media[m] != h))
    dropped = tuple(sorted(m for m in base.media if m not in media_now))
    notetypes = tuple(
        sorted(k for k, nt in plan.notetypes.items() if k in base.notetypes and base.notetypes[k] != nt.content_hash())
    )
    files = tuple(o.path for o in plan.outputs if o.base is None or o.base != hashlib.sha256(o.data).hexdigest())
    return Changeset(tuple(notes), leaving, moved, added, replaced, dropped, notetypes, files)


def changeset(plan: Plan) -> Changeset:
    """The changeset of a plan against the build record and release the plan itself read."""
    return changes(plan, baseline(plan.before, plan.last_release))


def _note_change(note: RenderedNote, base: Baseline, plan: Plan) -> NoteChange | None:
    old = base.stamps.get(note.card_id)
    media = tuple(sorted(set(note.media)))
    if old is None:
        previous = next((p for p in note.previous_ids if p in base.stamps), "")
        return NoteChange(note.card_id, "renamed" if previous else "added", media=media, previous=previous)
    if old.hash == note.content_hash:
        return None
    kind: NoteKind = "retired" if RETIRED_TAG in note.tags else "changed"
    known = base.notes.get(note.card_id)
    if known is None or known.notetype != note.notetype:
        return NoteChange(note.card_id, kind, media=media)
    notetype = plan.notetypes.get(note.notetype)
    names = notetype.fields if notetype is not None else tuple(str(i) for i in range(len(note.fields)))
    fields = tuple(
        name
        for i, name in enumerate(names)
        if (known.fields[i] if i < len(known.fields) else None) != (note.fields[i] if i < len(note.fields) else None)
    )
    return NoteChange(note.card_id, kind, fields, set(known.tags) != set(note.tags), media)


def _media(plan: Plan) -> dict[str, str]:
    """The hand-made images the plan ships: name -> sha256 (drawn diagrams are named by their
    content, so a redrawn one is a note's new media, not a replaced file)."""
    return {m.name: m.hash for m, _ill in plan.figures.values() if m.source}
