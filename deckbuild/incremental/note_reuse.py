"""Which notes a rebuild can take from the cache: a card's note is reused when nothing it was
rendered from changed (its card, the cards it draws on, its figure, the namespace)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from deckbuild.incremental.cache import BuildCache
from deckbuild.incremental.codec import shown_digest
from deckbuild.incremental.memo import NoteKey
from deckbuild.model import Card, MediaFile, RenderedNote


class NoteReuse:
    """Hands notes.render_notes the notes of the last build whose inputs are unchanged.

    A note is a pure function of its card, of what it shows of the cards it names (`of`,
    `related`, `duplicate_of`) or that name it as their duplicate -- their front text and
    the difficulty, topics and source a cloze inherits (shown_digest) --, of its figure's file
    name and illustrative flag, of the namespace and of the source titles (notes.render_notes); the key hashes
    all of them, so a hit is the note a fresh rendering would give.  Positions (`due`) are
    set here from the caller's.  tests/test_cache.py checks edit -> rebuild == clean build.
    """

    def __init__(
        self,
        cache: BuildCache,
        namespace: str,
        figures: Mapping[str, tuple[MediaFile, bool]],
        titles: Sequence[tuple[str, str]] = (),
    ) -> None:
        self._cache = cache
        self._namespace = namespace.encode() + (repr(tuple(titles)).encode() if titles else b"")
        self._figures = figures
        self._keys: dict[int, NoteKey] = {}  # id(card) -> its key and what it was computed from
        self._kept = cache.note_keys()  # ... as the last plan of this process had them (serve), or {}
        self.shown_digest: dict[str, bytes] = {}  # card id -> what notes naming it show of it (in their keys)
        self._found: dict[bytes, RenderedNote] | None = None

    def _key(self, card: Card, by_id: Mapping[str, Card], duplicates_of: Mapping[str, Sequence[str]]) -> NoteKey:
        overlapping = tuple(duplicates_of.get(card.id, ()))
        file = self._figures.get(card.id)
        figure = (file[0].name, file[1]) if file is not None else None
        refs = (card.of, *card.related, card.duplicate_of, *overlapping)
        parts = [self._namespace, self._cache.digest(card)]
        shown = self.shown_digest
        named = []
        for ref in refs:
            other = by_id.get(ref) if ref else None
            if ref:
                named.append((ref, other))
            part = shown.get(ref)
            if part is None:  # once per card named (a question is named by each of its clozes)
                part = shown[ref] = ref.encode() + b"=" + (shown_digest(other) if other is not None else b"-")
            parts.append(part)
        if figure is not None:
            parts.append(f"{figure[0]}\0{figure[1]}".encode())
        key = hashlib.blake2b(b"\0\0".join(parts), digest_size=16).digest()
        return NoteKey(card, overlapping, tuple(named), figure, self._namespace, key)

    def lookup(
        self, card: Card, due: int, by_id: Mapping[str, Card], duplicates_of: Mapping[str, Sequence[str]]
    ) -> RenderedNote | None:
        """The cached note for this card at position `due`, or None (then `store` it)."""
        found = self._found
        if found is None:  # the first call: every card's key, and one query for them all
            found = self._found = self._key_all(by_id, duplicates_of)
        known = self._keys.get(id(card))
        if known is None or known.card is not card:
            known = self._keys[id(card)] = self._key(card, by_id, duplicates_of)
        note = found.pop(known.key, None)  # each card is asked for once; a second ask renders again
        if note is None or note.due == due:
            return note  # a kept note at its place is shared as it is (a note is immutable)
        if note.due == -1:  # just read from the cache, shared with no one yet: placed, not copied
            object.__setattr__(note, "due", due)
            return note
        moved: RenderedNote = object.__new__(RenderedNote)
        object.__setattr__(moved, "__dict__", {**note.__dict__, "due": due})
        return moved

    def _key_all(self, by_id: Mapping[str, Card], duplicates_of: Mapping[str, Sequence[str]]) -> dict[bytes, RenderedNote]:
        """Every card's key, and the notes kept under them.  A card of the last plan of this
        process (serve: most of a save's) keeps its key while it is the same object, naming the
        same objects, with no figure and no card overlapping it, under the same namespace;
        the others' keys are computed (_key)."""
        keys, kept, figures, namespace = self._keys, self._kept, self._figures, self._namespace
        for card in by_id.values():
            known = kept.get(id(card))
            if (
                known is None
                or known.card is not card
                or card.id in figures
                or card.id in duplicates_of
                or known.namespace != namespace
                or known.figure is not None
                or known.overlapping
                or (known.named and not all(by_id.get(ref) is other for ref, other in known.named))
            ):
                known = self._key(card, by_id, duplicates_of)
            keys[id(card)] = known
        self._cache.remember_note_keys(keys)
        return self._cache.notes([known.key for known in keys.values()])

    def store(self, card: Card, note: RenderedNote) -> None:
        known = self._keys.get(id(card))
        if known is not None and known.card is card:
            self._cache.store_note(known.key, note)
