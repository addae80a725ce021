"""What one process keeps in memory of the build cache between plans (`deckbuild serve`).

A save in `serve` plans the whole deck again, and most of that plan's time at 10,000 cards
went to reading back from cache.sqlite what the previous plan of the same process had just
written: every unchanged card file's parsed cards (JSON), their check facts and every note
row.  A Memo keeps those values, under the same keys as the cache (each key holds
everything its value depends on), so a hit is what the cache would have returned.  The
file is still the store of record: BuildCache writes it as before, and marks what a memo
hit used, so the next fresh process finds the same entries.

After each plan the memo keeps only the entries that plan used: it holds one deck's worth.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from deckbuild.errors import Problem
    from deckbuild.model import Card, RenderedNote
    from deckbuild.validate import CardFacts


class NoteKey(NamedTuple):
    """A card's note key and everything else it was computed from (NoteReuse._key): the same
    card object, the same objects for the cards it names, the same figure and namespace."""

    card: Card
    overlapping: tuple[str, ...]  # the cards that say they duplicate it (duplicate_of)
    named: tuple[tuple[str, Card | None], ...]  # each card id it names, and that card
    figure: tuple[str, bool] | None
    namespace: bytes
    key: bytes


class FileNotes(NamedTuple):
    """A card file's notes in a plan, and everything besides its cards they were rendered from
    (the union of its cards' NoteKeys): the same inputs again mean the same notes."""

    cards: tuple[Card, ...]
    notes: tuple[RenderedNote, ...]  # at their positions in that plan
    named: tuple[tuple[str, Card | None], ...]  # each card id its notes show something of, and that card
    figures: dict[str, tuple[str, bool]]  # its cards with a figure -> the figure's file name, illustrative
    overlapping: dict[str, tuple[str, ...]]  # its cards that others say they duplicate -> those others
    namespace: bytes
    keys: tuple[bytes, ...]  # its notes' keys in the cache


class FileChecks(NamedTuple):
    """A card file's share of the deck-wide checks (file_checks.py), while its cards are the
    same objects: what it adds to the deck's sets of ids, GUIDs and cloze answers,
    and the problems found among its own cards."""

    cards: tuple[Card, ...]
    namespace: str  # the GUIDs' (deck.yaml's namespace)
    ids: frozenset[str]  # fewer than its cards if one is given twice
    named: frozenset[str]  # the ids its cards name (related, duplicate_of, of), their own left out
    of: frozenset[str]  # the ids its clozes give as `of`, their own left out
    not_qa: frozenset[str]  # its cards that are not question cards
    references: tuple[Problem, ...]  # validate.reference_problems of its cards
    claimed: frozenset[tuple[str, tuple[str, ...]]]  # (question, answer) its clozes delete (E414)
    claim_problems: tuple[Problem, ...]  # E414 among its own clozes
    guids: frozenset[str]
    guid_problems: tuple[Problem, ...]  # E222 among its own cards
    shipped: dict[str, str]  # id -> GUID, its cards without previous_ids (identity: E225)
    kinds: dict[str, str]  # id -> note type key, its cards without previous_ids (identity: E172)
    renamed: tuple[Card, ...]  # its cards with previous_ids


@dataclass
class Memo:
    """Cache values by cache key; BuildCache reads it before the file and fills it as it goes."""

    parsed: dict[bytes, tuple[tuple[Card, ...], tuple[Problem, ...], tuple[bytes, ...]]] = field(default_factory=dict)
    facts: dict[bytes, tuple[CardFacts, ...]] = field(default_factory=dict)
    notes: dict[bytes, RenderedNote] = field(default_factory=dict)  # shared, not copied: a note is immutable
    note_keys: dict[int, NoteKey] = field(default_factory=dict)
    """id(card) -> what the card's note key was computed from, and the key (NoteReuse): an
    unchanged card file's cards are the same objects plan after plan, so their keys are too."""
    file_notes: dict[str, FileNotes] = field(default_factory=dict)
    """Each card file's notes in the last plan, by display path (NoteReuse.kept_runs): a file
    whose notes were rendered from the same inputs as then keeps them whole, none looked up."""
    derived: dict[str, tuple[object, object, object]] = field(default_factory=dict)
    """By name: two objects a stage read and what it made of them (the release stage's Known of
    the record and snapshot), for a plan that reads the very same objects again."""
    files: dict[str, tuple[bytes, object]] = field(default_factory=dict)
    """By file: its bytes as a stage last read them and the value it made of them (the build
    record: release/record.py), for a stage above this package to check and take back."""
    file_checks: dict[str, FileChecks] = field(default_factory=dict)
    """Each card file's share of the deck-wide checks in the last plan, by display path
    (file_checks.py): a file with the same card objects keeps it."""
    runs: dict[str, tuple[tuple[Card, ...], tuple[CardFacts, ...]]] = field(default_factory=dict)
    """Each card file's cards and facts in the last plan, by display path: an edited file's
    unedited cards keep their facts (card_key)."""

    def retain(self, parsed: set[bytes], facts: set[bytes], notes: set[bytes], paths: set[str]) -> None:
        """Forget what the last plan did not use (a file edited away, a note re-rendered)."""
        self.runs = {k: v for k, v in self.runs.items() if k in paths}
        self.parsed = {k: v for k, v in self.parsed.items() if k in parsed}
        self.facts = {k: v for k, v in self.facts.items() if k in facts}
        for key in self.notes.keys() - notes:  # in place: a save changes a few of 100,000
            del self.notes[key]

    def earlier_facts(self, path: str) -> dict[Hashable, CardFacts]:
        """The facts of the cards the file at `path` had in the last plan, by card_key."""
        cards, facts = self.runs.get(path, ((), ()))
        earlier: dict[Hashable, CardFacts] = {}
        for card, kept in zip(cards, facts, strict=True):
            key = card_key(card)
            if key is not None:
                earlier[key] = kept
        return earlier


def card_key(card: Card) -> Hashable | None:
    """What a card's facts depend on: the card and where each of its keys is (the problems
    name them, and key_locations is left out of the card's equality).  None if a value of
    the card cannot be hashed (a diagram parameter given as a list)."""
    key = (card, tuple(sorted(card.key_locations.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key
