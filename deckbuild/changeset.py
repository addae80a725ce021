"""What changed: the notes, media and note types a deck ships now, compared with a baseline.

The plan says what the package *is*; the changeset says what is new in it.  One pure function
computes it, from the notes now and a Baseline (what the build record remembers of the last
build, or what the last release shipped), so every command that reports a difference reads
the same answer: the build line, the release's bump and changelog.  It imports nothing but
the data model, so the release stage inside the plan can decide its version from it
(plan_result.py builds a plan's baseline from the record and the release the plan read).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Literal, Protocol

from deckbuild.model import RETIRED_TAG, RenderedNote

NoteKind = Literal["added", "changed", "retired", "renamed", "restored", "still_retired"]
"""added: a new id; changed: other fields or tags; retired: now shipped retired; renamed: a new
id that keeps an old note (same GUID, or the card's previous_ids); restored: a note the
baseline shipped retired is live again; still_retired: a note the baseline shipped retired
ships retired with other content (its notice reworded)."""


class OldNote(Protocol):
    """What a baseline knows of a note it shipped (a release's PublishedNote is one)."""

    @property
    def card_id(self) -> str: ...
    @property
    def guid(self) -> str: ...
    @property
    def notetype(self) -> str: ...
    @property
    def fields(self) -> tuple[str, ...]: ...
    @property
    def tags(self) -> tuple[str, ...]: ...
    @property
    def deck(self) -> str: ...
    @property
    def retired(self) -> bool: ...


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
    """Every difference between what ships now and the baseline; empty when nothing changed."""

    notes: tuple[NoteChange, ...] = ()  # sorted by card id
    # Notes the baseline shipped live that ship no more (a release retires them).
    leaving: tuple[str, ...] = ()
    moved: tuple[tuple[str, str, str], ...] = ()  # (card id, subdeck before, subdeck now), by card id
    media_added: tuple[str, ...] = ()
    media_replaced: tuple[str, ...] = ()
    media_dropped: tuple[str, ...] = ()
    notetypes: tuple[str, ...] = ()  # note types whose fields, templates or CSS changed
    files: tuple[Path, ...] = ()  # the files whose bytes the plan would change, in write order
    # Every note of the baseline (live or retired) that ships no more, by card id (`diff` lists them).
    removed: tuple[str, ...] = ()
    notetypes_added: tuple[str, ...] = ()  # note types the baseline did not ship
    notetypes_dropped: tuple[str, ...] = ()  # note types it shipped that ship no more (where the note types now are known)

    def of_kind(self, *kinds: NoteKind) -> tuple[NoteChange, ...]:
        return tuple(n for n in self.notes if n.kind in kinds)

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
            or self.removed
            or self.notetypes_added
            or self.notetypes_dropped
        )


@dataclass(frozen=True)
class Baseline:
    """What was last shipped: each note's content hash, the old content where known, note types, media."""

    hashes: Mapping[str, str] = field(default_factory=dict)  # card id -> content hash
    guids: Mapping[str, str] = field(default_factory=dict)  # GUID -> card id (a renamed card keeps its GUID)
    notes: Mapping[str, OldNote] = field(default_factory=dict)  # old fields, tags and deck, where known
    notetypes: Mapping[str, object] = field(default_factory=dict)  # key -> its hash or schema
    media: Mapping[str, str] = field(default_factory=dict)  # name -> sha256 ("" if unknown)


def changes(
    base: Baseline,
    notes: Sequence[RenderedNote],
    *,
    field_names: Mapping[str, Sequence[str]],
    notetypes: Mapping[str, object] | None = None,
    media: Mapping[str, str] | None = None,
    files: Iterable[Path] = (),
) -> Changeset:
    """What `notes` (and the note types and media now, in the baseline's terms) ship that
    `base` did not, or ship differently: pure, reads no file.  `field_names`: each note type's
    field names; a note type or a media file is compared only where both sides know it."""
    old_notes = base.notes
    hashes = base.hashes
    # A note that is the baseline's own note object (serve compares a plan with the one it
    # shows, whose unchanged notes it shares) ships as it shipped: nothing to compare, nor to
    # look at again for a move.  Only a note whose content hash differs can be a change
    # (_note_change), so a large deck's rebuild looks closer at the few it edited, not at every note.
    others = [n for n in notes if old_notes.get(n.card_id) is not n] if old_notes else notes
    edited = [n for n in others if hashes.get(n.card_id) != n.content_hash]
    edited.sort(key=_CARD_ID)
    found = [c for n in edited if (c := _note_change(n, base, field_names)) is not None]
    current = {n.card_id: n for n in notes} if old_notes else {}  # card ids are unique in a deck
    gone = sorted(old_notes.keys() - current.keys())
    if gone:  # a note another card claims (renamed, or named in previous_ids) did not go
        claimed = {p for n in current.values() for p in n.previous_ids} | {c.previous for c in found}
        gone = [k for k in gone if k not in claimed]
    leaving = tuple(k for k in gone if not old_notes[k].retired)
    moved: list[tuple[str, str, str]] = []
    by_guid: dict[str, OldNote] | None = None
    for n in others if old_notes else ():  # without old notes nothing is known to have moved
        if RETIRED_TAG in n.tags:
            continue
        k = n.card_id
        old = old_notes.get(k)
        if old is None or old.guid != n.guid or old.retired:  # another card's note, if any, by GUID
            if by_guid is None:
                by_guid = {o.guid: o for o in old_notes.values() if not o.retired}
            old = by_guid.get(n.guid)
        if old is not None and old.deck != n.deck:
            moved.append((k, old.deck, n.deck))
    moved.sort()
    now = media or {}
    known = [m for m in now if m in base.media]
    types = notetypes or {}
    return Changeset(
        tuple(found),
        leaving,
        tuple(moved),
        tuple(sorted(m for m in now if m not in base.media)),
        tuple(sorted(m for m in known if base.media[m] and now[m] and base.media[m] != now[m])),
        tuple(sorted(m for m in base.media if media is not None and m not in now)),
        tuple(sorted(k for k, v in types.items() if k in base.notetypes and base.notetypes[k] != v)),
        tuple(files),
        tuple(gone),
        tuple(sorted(k for k in types if k not in base.notetypes)),
        tuple(sorted(k for k in base.notetypes if notetypes is not None and k not in types)),
    )


_CARD_ID = attrgetter("card_id")


def _note_change(note: RenderedNote, base: Baseline, field_names: Mapping[str, Sequence[str]]) -> NoteChange | None:
    old_hash = base.hashes.get(note.card_id)
    if old_hash == note.content_hash:  # most notes of a rebuild: nothing else to compute
        return None
    media = tuple(sorted(set(note.media)))
    if old_hash is None:
        previous = next((p for p in note.previous_ids if p in base.hashes), "")
        if not previous and base.guids.get(note.guid, note.card_id) != note.card_id:
            previous = base.guids[note.guid]
        return NoteChange(note.card_id, "renamed" if previous else "added", media=media, previous=previous)
    known = base.notes.get(note.card_id)
    kind: NoteKind = "retired" if RETIRED_TAG in note.tags else "changed"
    if known is not None and known.retired:
        kind = "still_retired" if kind == "retired" else "restored"
    if known is None or known.notetype != note.notetype:
        return NoteChange(note.card_id, kind, media=media)
    names = field_names.get(note.notetype) or tuple(str(i) for i in range(len(note.fields)))
    old, new = dict(enumerate(known.fields)), dict(enumerate(note.fields))
    changed = tuple(name for i, name in enumerate(names) if old.get(i) != new.get(i))
    return NoteChange(note.card_id, kind, changed, set(known.tags) != set(note.tags), media)
