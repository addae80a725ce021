"""The changeset of a package against a learner's collection: what `push` would change there.

Push compares what it ships with what the learner holds, not with the last build: a note is
new if the collection lacks its GUID, changed if its fields or tags there differ from the
package's, and a media file is to deliver if the collection's media folder lacks it.  Those
answers are one Changeset (changeset.py), with the collection as the baseline; the push's
field-by-field merge then runs on its changed notes only, and the report reads its counts
from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from deckbuild.apkg.read import ShippedNote
from deckbuild.changeset import Baseline, Changeset, changes
from deckbuild.model import RenderedNote, content_hash


def as_rendered(note: ShippedNote, fields: Iterable[str] | None = None, tags: Iterable[str] | None = None) -> RenderedNote:
    """A package's note (or, given its `fields` and `tags` there, the learner's copy of it) as the changeset compares notes."""
    values = tuple(note.fields.values()) if fields is None else tuple(fields)
    labels = tuple(sorted(note.tags if tags is None else tags))
    return RenderedNote(note.card_id, note.guid, note.notetype, values, labels, 0, content_hash("", values, labels))


def against_collection(
    shipped: Mapping[str, ShippedNote],
    held: Mapping[str, tuple[Iterable[str], Iterable[str]]],
    *,
    media: Iterable[str],
    media_held: Iterable[str],
) -> Changeset:
    """The package's notes (`shipped`, by GUID) and media names against the collection's copies:
    `held`, GUID -> (fields, tags) of the learner's note of that GUID; `media_held`: the
    package's media files the collection's folder has."""
    olds = [as_rendered(shipped[guid], fields, tags) for guid, (fields, tags) in held.items() if guid in shipped]
    base = Baseline(
        {n.card_id: n.content_hash for n in olds},
        {n.guid: n.card_id for n in olds},
        {n.card_id: n for n in olds},
        media={name: "" for name in media_held},
    )
    names = {n.notetype: tuple(n.fields) for n in shipped.values()}
    return changes(base, [as_rendered(n) for n in shipped.values()], field_names=names, media={name: "" for name in media})
