"""Which notes a rebuild can take from the cache: a card's note is reused when nothing it was
rendered from changed (its card, the cards it draws on, its figure, the namespace).  A card
file none of whose inputs changed keeps its notes whole: in serve, those of the last save; in
a build, those the cache keeps under the file's bytes with what else they were rendered from."""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Iterable, Mapping, Sequence
from itertools import groupby
from typing import TypeVar

from deckbuild.apkg.notetypes import CLOZE_FIELDS, QA_FIELDS
from deckbuild.incremental.cache import BuildCache
from deckbuild.incremental.codec import FileEntry, decode_file_entry, encode_file_entry, shown_digest
from deckbuild.incremental.memo import FileNotes, NoteKey
from deckbuild.model import Card, MediaFile, RenderedNote

_PATH = operator.attrgetter("location.path")
_V = TypeVar("_V")


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
        self._memo = cache.memo()  # what the last plan of this process kept (serve), or None
        self._kept = self._memo.note_keys if self._memo is not None else {}  # ... its keys
        self._files: dict[str, FileNotes] = {}  # this plan's card files' notes (serve)
        self._todo: list[Card] | None = None  # the cards kept_runs left to look up (None: all)
        self._runs: list[tuple[str, tuple[Card, ...]]] | None = None  # the cards by file, as kept_runs saw them
        self.shown_digest: dict[str, bytes] = {}  # card id -> what notes naming it show of it (in their keys)
        self._kept_whole: set[str] = set()  # card files whose notes _stored_runs took whole
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
                part = self._shown(ref, by_id)
            parts.append(part)
        if figure is not None:
            parts.append(f"{figure[0]}\0{figure[1]}".encode())
        key = hashlib.blake2b(b"\0\0".join(parts), digest_size=16).digest()
        return NoteKey(card, overlapping, tuple(named), figure, self._namespace, key)

    def _shown(self, ref: str, by_id: Mapping[str, Card]) -> bytes:
        """What a note naming card `ref` shows of it, as its key holds it (computed once per card named)."""
        part = self.shown_digest.get(ref)
        if part is None:
            other = by_id.get(ref)
            part = self.shown_digest[ref] = ref.encode() + b"=" + (shown_digest(other) if other is not None else b"-")
        return part

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
        return _at(note, due) if note is not None and _fits(card, note) else None

    def _key_all(
        self, by_id: Mapping[str, Card], duplicates_of: Mapping[str, Sequence[str]], also: Sequence[bytes] = ()
    ) -> dict[bytes, RenderedNote]:
        """Every card's key, and the notes kept under them.  A card of the last plan of this
        process (serve: most of a save's) keeps its key while it is the same object, naming the
        same objects, with no figure and no card overlapping it, under the same namespace;
        the others' keys are computed (_key)."""
        keys, kept, figures, namespace = self._keys, self._kept, self._figures, self._namespace
        for card in by_id.values() if self._todo is None else self._todo:
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
        if self._memo is not None:
            self._memo.note_keys = keys  # for the next plan of this process
        return self._cache.notes([*also, *(known.key for known in keys.values())])

    def store(self, card: Card, note: RenderedNote) -> None:
        known = self._keys.get(id(card))
        if known is not None and known.card is card:
            self._cache.store_note(known.key, note)

    # -- serve: whole card files kept

    def kept_runs(
        self, cards: Sequence[Card], by_id: Mapping[str, Card], duplicates_of: Mapping[str, Sequence[str]]
    ) -> dict[int, tuple[RenderedNote, ...]]:
        """serve: the notes of each card file (a run of `cards`) that the last plan of this process
        rendered from the same inputs -- its very card objects, what its notes show of the cards
        they name (shown_digest, as the note keys), its figures, the cards overlapping its cards,
        the namespace --, by the position of its first card.  They are that plan's notes (moved
        with the file): none of its cards is keyed or looked up (at 100,000 cards, most of a
        save's rendering stage).  Without a memo, the files whose entries in the cache say so
        (_stored_runs)."""
        self._runs = [(path, tuple(group)) for path, group in groupby(cards, key=_PATH)]  # for remember_runs
        if self._memo is None:
            return self._stored_runs(by_id, duplicates_of)
        last = self._memo.file_notes
        if not last:
            return {}
        figures = _by_file(by_id, ((cid, (file.name, ill)) for cid, (file, ill) in self._figures.items()))
        overlapping = _by_file(by_id, ((cid, tuple(others)) for cid, others in duplicates_of.items()))
        kept: dict[int, tuple[RenderedNote, ...]] = {}
        todo: list[Card] = []
        start = 0
        for path, run in self._runs:
            was = last.get(path)
            if (
                was is not None
                and was.namespace == self._namespace
                and len(was.cards) == len(run)
                and all(map(operator.is_, run, was.cards))
                and was.figures == figures.get(path, {})
                and was.overlapping == overlapping.get(path, {})
                and (named := _shown_the_same(was.named, by_id)) is not None
            ):
                notes = was.notes
                if notes[0].due != start:  # an earlier file gained or lost cards
                    notes = tuple(_placed(note, start + index) for index, note in enumerate(notes))
                kept[start] = notes
                self._cache.use_notes(was.keys)
                self._files[path] = was._replace(notes=notes, named=named)
            else:
                todo.extend(run)
            start += len(run)
        self._todo = todo
        return kept

    def _stored_runs(
        self, by_id: Mapping[str, Card], duplicates_of: Mapping[str, Sequence[str]]
    ) -> dict[int, tuple[RenderedNote, ...]]:
        """kept_runs in a process without a memo: a card file whose bytes the cache knows, with the
        entry the last build left for them (FileEntry), keeps its notes whole when everything else
        its notes were rendered from is unchanged too: what they show of the cards they name, its
        figures, the cards overlapping its cards, the namespace -- the inputs of its cards' note
        keys besides the cards themselves.  Their notes come in the one read of the notes table
        that also brings the other cards' (_key_all), and a file any of whose notes is missing or
        does not fit its card is looked up card by card."""
        assert self._runs is not None
        cache, runs = self._cache, self._runs
        file_keys = {path: key for path, _run in runs if (key := cache.read_key(path)) is not None}
        stored = cache.file_entries(file_keys.values())
        figures = _by_file(by_id, ((cid, (file.name, ill)) for cid, (file, ill) in self._figures.items()))
        overlapping = _by_file(by_id, ((cid, tuple(others)) for cid, others in duplicates_of.items()))
        namespace, shown_digest = _digest(self._namespace), self.shown_digest
        whole: dict[str, FileEntry] = {}
        todo: list[Card] = []
        for path, run in runs:
            text = stored.get(file_keys.get(path, b""))
            entry = decode_file_entry(text) if text is not None else None
            if (
                entry is not None
                and len(entry.keys) == len(run)
                and entry.namespace == namespace
                and entry.figures == figures.get(path, {})
                and entry.overlapping == overlapping.get(path, {})
                and all((shown_digest.get(ref) or self._shown(ref, by_id)) == shown for ref, shown in entry.named)
            ):
                whole[path] = entry
            else:
                todo.extend(run)
        self._todo = todo
        found = self._found = self._key_all(by_id, duplicates_of, [k for e in whole.values() for k in e.keys])
        kept: dict[int, tuple[RenderedNote, ...]] = {}
        start = 0
        for path, run in runs:
            entry = whole.get(path)
            if entry is not None:
                notes = [found.get(key) for key in entry.keys]
                if all(n is not None and _fits(c, n) for c, n in zip(run, notes, strict=True)):
                    for key in entry.keys:
                        del found[key]
                    # (no None among them: checked above)
                    kept[start] = tuple(map(_at, notes, range(start, start + len(run))))  # type: ignore[arg-type]
                    self._kept_whole.add(path)
            start += len(run)
        return kept

    def remember_runs(self, notes: Sequence[RenderedNote]) -> None:
        """Each card file's notes of this plan (`notes`: one per card of the cards kept_runs was
        given, in order) and what they were rendered from, for the next plan's kept_runs: in
        serve, in the memo; without one, what the cache keeps of them (_store_entries).  A file
        with a card of a declared note type is left out (its notes depend on the note type, not
        in any key)."""
        if self._runs is None:
            return
        if self._memo is None:
            self._store_entries()
            return
        files, keys = self._files, self._keys
        start = 0
        for path, run in self._runs:
            end = start + len(run)
            if path in files:  # kept whole
                start = end
                continue
            made = [keys.get(id(card)) for card in run]
            known = [k for k, card in zip(made, run, strict=True) if k is not None and k.card is card and card.kind != "note"]
            if len(known) == len(run):  # every card keyed (looked up) this plan
                named: dict[str, Card | None] = {}
                for key in known:
                    named.update(key.named)
                files[path] = FileNotes(
                    run,
                    tuple(notes[start:end]),
                    tuple(named.items()),
                    {k.card.id: k.figure for k in known if k.figure is not None},
                    {k.card.id: k.overlapping for k in known if k.overlapping},
                    self._namespace,
                    tuple(k.key for k in known),
                )
            start = end
        self._memo.file_notes = files

    def _store_entries(self) -> None:
        """The cache's entry of each card file whose every card was keyed in this plan (and is not
        of a declared note type), under the file's key: what its notes were rendered from."""
        assert self._runs is not None
        keys, entries = self._keys, {}
        for path, run in self._runs:
            file_key = self._cache.read_key(path)
            made = [keys.get(id(card)) for card in run]
            known = [k for k, card in zip(made, run, strict=True) if k is not None and k.card is card and card.kind != "note"]
            if path in self._kept_whole or file_key is None or len(known) != len(run):
                continue
            named = {ref: self.shown_digest[ref] for key in known for ref, _other in key.named}  # parts of their keys
            entries[file_key] = encode_file_entry(
                FileEntry(
                    _digest(self._namespace),
                    {k.card.id: k.figure for k in known if k.figure is not None},
                    {k.card.id: k.overlapping for k in known if k.overlapping},
                    tuple(named.items()),
                    tuple(k.key for k in known),
                )
            )
        self._cache.store_file_entries(entries)


_QA_FIELDS, _CLOZE_FIELDS = len(QA_FIELDS), len(CLOZE_FIELDS)


def _fits(card: Card, note: RenderedNote) -> bool:
    """Whether a note read back has the fields of its card's note type (a damaged row has not)."""
    return len(note.fields) == (_QA_FIELDS if card.kind == "qa" else _CLOZE_FIELDS) or card.kind == "note"


def _at(note: RenderedNote, due: int) -> RenderedNote:
    """The note at position `due`: as it is if it is there, placed if just read from the cache
    (shared with no one yet), else a copy (the note itself may be another plan's)."""
    if note.due == due:
        return note
    if note.due == -1:
        object.__setattr__(note, "due", due)
        return note
    return _placed(note, due)


def _digest(namespace: bytes) -> str:
    return hashlib.blake2b(namespace, digest_size=16).hexdigest()


def _placed(note: RenderedNote, due: int) -> RenderedNote:
    """The note at position `due`: a copy (the note itself may be another plan's)."""
    moved: RenderedNote = object.__new__(RenderedNote)
    object.__setattr__(moved, "__dict__", {**note.__dict__, "due": due})
    return moved


def _shown_the_same(
    named: tuple[tuple[str, Card | None], ...], by_id: Mapping[str, Card]
) -> tuple[tuple[str, Card | None], ...] | None:
    """`named` with the cards now holding those ids if each shows what it showed (the same object,
    or a card of a file parsed again with the same shown_digest, as the note keys compare); else None."""
    now = tuple((ref, by_id.get(ref)) for ref, _other in named)
    for (_ref, card), (_same, other) in zip(now, named, strict=True):
        if card is not other and (card is None or other is None or shown_digest(card) != shown_digest(other)):
            return None
    return now


def _by_file(by_id: Mapping[str, Card], items: Iterable[tuple[str, _V]]) -> dict[str, dict[str, _V]]:
    """(card id, value) pairs grouped by the file of the card with that id (ids of no card left out)."""
    grouped: dict[str, dict[str, _V]] = {}
    for card_id, value in items:
        card = by_id.get(card_id)
        if card is not None:
            grouped.setdefault(card.location.path, {})[card_id] = value
    return grouped
