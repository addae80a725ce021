"""Which notes a variant ships: a note's facts, the filter's match, and the chosen card ids.

See variants.py for the rule; the release of a variant (release/variants.py) and its
package (variants.py) both choose through this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from deckbuild.model import Card, DeckConfig, RenderedNote, Variant

if TYPE_CHECKING:
    from deckbuild.apkg.notetypes import NoteType


@dataclass(frozen=True)
class Facts:
    """What a filter looks at, for one note."""

    kind: str
    difficulty: str
    topics: tuple[str, ...]
    tags: tuple[str, ...]
    deck: str  # relative to the deck's name; "" for the deck itself


def card_facts(card: Card, by_id: Mapping[str, Card]) -> Facts:
    """A card's facts, as the full deck renders them (inherited difficulty and topics, every tag)."""
    from deckbuild.notes import card_tags, effective

    difficulty, topics, source = effective(card, by_id)
    kind = card.notetype if card.kind == "note" else card.kind
    return Facts(kind, difficulty, tuple(topics), card_tags(card, difficulty, topics, source), card.deck)


def tag_facts(notetype: str, tags: Sequence[str], deck: str = "") -> Facts:
    """A shipped note's facts from its tags (a retired note: as it was when last active)."""
    from deckbuild.model import RETIRED_TAG
    from deckbuild.notes import DIFFICULTY_TAG, KIND_TAG, TOPIC_TAG

    kept = tuple(t for t in tags if t != RETIRED_TAG)
    built_in = notetype in ("qa", "cloze")  # a declared note type's key is its kind
    kind = next((t.removeprefix(KIND_TAG) for t in kept if t.startswith(KIND_TAG)), "qa" if notetype == "qa" else "")
    kind = kind if built_in else notetype
    difficulty = next((t.removeprefix(DIFFICULTY_TAG) for t in kept if t.startswith(DIFFICULTY_TAG)), "")
    topics = tuple(t.removeprefix(TOPIC_TAG) for t in kept if t.startswith(TOPIC_TAG))
    return Facts(kind, difficulty, topics, kept, deck)


def _under(value: str, wanted: str) -> bool:
    """Anki's hierarchy rule: a::b is under a and under a::b (case-insensitive, as Anki's tag search)."""
    value, wanted = value.casefold(), wanted.casefold()
    return value == wanted or value.startswith(wanted + "::")


def criterion_matches(criterion: str, wanted: str, facts: Facts) -> bool:
    if criterion == "kind":
        return facts.kind == wanted
    if criterion == "difficulty":
        return facts.difficulty == wanted
    if criterion == "topics":
        return any(_under(topic, wanted) for topic in facts.topics)
    if criterion == "tags":
        return any(_under(tag, wanted) for tag in facts.tags)
    return bool(facts.deck) and _under(facts.deck, wanted)


def matches(variant: Variant, facts: Facts) -> bool:
    """Every criterion matches (AND), each by any of its values (OR)."""
    return all(any(criterion_matches(c, v, facts) for v in values) for c, values in variant.include)


@dataclass(frozen=True)
class Source:
    """What variants are cut from: the project's folder, deck.yaml, cards and note types."""

    root: Path
    config: DeckConfig
    cards: tuple[Card, ...]
    notetypes: Mapping[str, NoteType]


def members(
    variant: Variant,
    cards: Sequence[Card],
    retired: Mapping[str, Facts],
    released: Sequence[str] = (),
) -> set[str]:
    """The card ids of the notes the variant ships (see the module docstring).

    `retired`: the full deck's retired notes (card id -> facts as last active);
    `released`: the card ids of the variant's last release.
    """
    by_id = {card.id: card for card in cards}
    chosen = {card.id for card in cards if matches(variant, card_facts(card, by_id))}
    chosen.update(card_id for card_id, facts in retired.items() if matches(variant, facts))
    chosen.update(card_id for card_id in released if card_id in by_id or card_id in retired)
    return chosen


def retired_facts(cards: Sequence[Card], notes: Sequence[RenderedNote]) -> dict[str, Facts]:
    """The facts of the notes that ship without a card (retired), from their tags."""
    live = {card.id for card in cards}
    return {n.card_id: tag_facts(n.notetype, n.tags) for n in notes if n.card_id not in live}
