"""What a save in `deckbuild serve` redraws: a function of the changeset, nothing else.

The baseline is the plan the site shows (its notes, note types and media), the new plan is
compared with it by changeset.py's `changes`, and `redraw` turns that changeset into the
notes to replace and render again, the notes to drop and the media files to copy or remove.
A note type or deck.yaml change redraws everything (every page shows the deck's name and
Anki's rendering of its note type).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deckbuild.changeset import Baseline, Changeset
from deckbuild.plan_result import changes_against

if TYPE_CHECKING:
    from deckbuild.model import MediaFile, RenderedNote
    from deckbuild.plan_result import Plan


@dataclass(frozen=True)
class Redraw:
    """What one save redraws: everything, or these notes and media files."""

    full: bool = False
    notes: tuple[str, ...] = ()  # card ids whose notes are replaced and whose cards are rendered again
    gone: tuple[str, ...] = ()  # card ids of the shown plan whose notes leave the site
    media: tuple[str, ...] = ()  # media files copied into the site again (new or replaced)
    media_gone: tuple[str, ...] = ()  # media files removed from the site


def redraw(changed: Changeset, *, config_changed: bool = False) -> Redraw:
    """The redraw set of `changed`: a changed note type or deck.yaml (`config_changed`) redraws all."""
    if config_changed or changed.notetypes:
        return Redraw(full=True)
    notes = {n.card_id for n in changed.notes} | {card_id for card_id, _before, _now in changed.moved}
    gone = set(changed.leaving) | {n.previous for n in changed.notes if n.previous}
    media = sorted({*changed.media_added, *changed.media_replaced})
    return Redraw(False, tuple(sorted(notes)), tuple(sorted(gone - notes)), tuple(media), tuple(changed.media_dropped))


def shown_changes(
    shown: Mapping[str, RenderedNote],
    shown_plan: Plan,
    planned: Plan,
    shown_media: Mapping[str, str],
    media: Mapping[str, str],
) -> Changeset:
    """The changeset between the notes (`shown`: by card id), note types and media (name ->
    sha256) of the plan the site shows and those of `planned`.  The baseline reads the notes'
    hashes and GUIDs from them as the changeset asks (for the few notes that are not the
    shown ones themselves), instead of copying every one on every save."""
    base = Baseline(
        _Hashes(shown),
        _Guids(shown),
        shown,  # a RenderedNote is a changeset.OldNote
        {k: nt.content_hash() for k, nt in shown_plan.notetypes.items()},
        shown_media,
    )
    return changes_against(base, planned, media)


class _Hashes(Mapping[str, str]):
    """Card id -> content hash of the notes by card id, read as asked."""

    def __init__(self, notes: Mapping[str, RenderedNote]) -> None:
        self._notes = notes

    def __getitem__(self, card_id: str) -> str:
        return self._notes[card_id].content_hash

    def __contains__(self, card_id: object) -> bool:
        return card_id in self._notes

    def __iter__(self) -> Iterator[str]:
        return iter(self._notes)

    def __len__(self) -> int:
        return len(self._notes)


class _Guids(Mapping[str, str]):
    """GUID -> card id of the notes by card id, made on first use (a note added or renamed)."""

    def __init__(self, notes: Mapping[str, RenderedNote]) -> None:
        self._notes = notes
        self._by_guid: dict[str, str] | None = None

    def _map(self) -> dict[str, str]:
        if self._by_guid is None:
            self._by_guid = {n.guid: card_id for card_id, n in self._notes.items()}
        return self._by_guid

    def __getitem__(self, guid: str) -> str:
        return self._map()[guid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())


def media_digests(media: Mapping[str, MediaFile]) -> dict[str, str]:
    """Each media file's sha256 (a hand-made image's the plan knows; the others' are read now)."""
    return {name: m.hash or _file_digest(m) for name, m in media.items()}


def _file_digest(media: MediaFile) -> str:
    try:
        return hashlib.sha256(media.path.read_bytes()).hexdigest()
    except OSError:
        return ""
