"""What a save in `deckbuild serve` redraws: a function of the changeset, nothing else.

The baseline is the plan the site shows (its notes, note types and media), the new plan is
compared with it by changeset.py's `changes`, and `redraw` turns that changeset into the
notes to replace and render again, the notes to drop and the media files to copy or remove.
A note type or deck.yaml change redraws everything (every page shows the deck's name and
Anki's rendering of its note type).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deckbuild.changeset import Baseline, Changeset
from deckbuild.plan_result import changes_against

if TYPE_CHECKING:
    from deckbuild.model import MediaFile
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


def shown_changes(shown: Plan, planned: Plan, shown_media: Mapping[str, str], media: Mapping[str, str]) -> Changeset:
    """The changeset between the notes, note types and media (name -> sha256) of the plan the
    site shows and those of `planned`."""
    old = [s.note for s in shown.notes]
    base = Baseline(
        {n.card_id: n.content_hash for n in old},
        {n.guid: n.card_id for n in old},
        {n.card_id: n for n in old},  # a RenderedNote is a changeset.OldNote
        {k: nt.content_hash() for k, nt in shown.notetypes.items()},
        shown_media,
    )
    return changes_against(base, planned, media)


def media_digests(media: Mapping[str, MediaFile]) -> dict[str, str]:
    """Each media file's sha256 (a hand-made image's the plan knows; the others' are read now)."""
    return {name: m.hash or _file_digest(m) for name, m in media.items()}


def _file_digest(media: MediaFile) -> str:
    try:
        return hashlib.sha256(media.path.read_bytes()).hexdigest()
    except OSError:
        return ""
