"""Every id Anki sees, derived from explicit inputs only (never from card text).

Anki matches notes by GUID, note types and decks by their ids and names.  All of
them are computed here from the deck namespace and stable, human-chosen names, so
that an edit to a card's text never changes its identity.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
import unicodedata
from collections.abc import Iterable, Iterator

_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "at",
        "by",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "do",
        "does",
        "did",
        "doing",
        "how",
        "why",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "your",
        "you",
        "we",
        "i",
        "my",
        "our",
        "their",
        "they",
        "them",
        "with",
        "without",
        "into",
        "than",
        "then",
        "vs",
        "versus",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "have",
        "has",
        "had",
        "not",
        "no",
        "one",
        "s",
    ]
)

CARD_ID_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,78}[a-z0-9])?$")
"""A card id: lower-case ASCII letters, digits, '.', '_' and '-', 1-80 characters."""


def _hash_int(*parts: str, bits: int = 52) -> int:
    """A stable positive integer from text parts (sha256, not Python's salted hash)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - bits)


@functools.lru_cache(maxsize=1 << 18)  # asked for every card several times per build; serve builds again and again
def note_guid(namespace: str, card_id: str) -> str:
    """The note GUID: a function of the deck namespace and the card id only."""
    digest = hashlib.sha256(f"deckbuild-guid\x1f{namespace}\x1f{card_id}".encode()).digest()
    # 10 bytes of base91-free hex keeps GUIDs readable in Anki's browser and collision-safe.
    return digest[:10].hex()


def card_guid(namespace: str, card_id: str, previous_ids: tuple[str, ...] = ()) -> str:
    """A card's note GUID: that of its original id (the first of `previous_ids`), so a
    renamed card keeps the note, and the review history, the learner already has."""
    return note_guid(namespace, previous_ids[0] if previous_ids else card_id)


def deck_id(namespace: str, deck_name: str) -> int:
    """The deck id.  Anki matches decks by name; the id only needs to be stable."""
    return _hash_int("deck", namespace, deck_name) | (1 << 40)


def notetype_id(namespace: str, notetype_key: str) -> int:
    """The note type id, e.g. for ("dl-interview", "qa")."""
    return _hash_int("notetype", namespace, notetype_key) | (1 << 40)


def field_id(namespace: str, notetype_key: str, field_key: str) -> int:
    """A stable id for a note type field, so Anki can follow renames in place.

    `field_key` is the name the field was first released under (notetypes.field_key), not
    its current name: renaming a field must keep its id.
    """
    return _hash_int("field", namespace, notetype_key, field_key, bits=62)


def template_id(namespace: str, notetype_key: str, template_name: str) -> int:
    """A stable id for a card template."""
    return _hash_int("template", namespace, notetype_key, template_name, bits=62)


def package_time(mods: Iterable[int]) -> int:
    """A package's own timestamp: the newest note or note type mod in it (never the clock,
    so rebuilding the same sources gives the same bytes)."""
    return max([*mods, 1])


def row_ids(time: int) -> Iterator[int]:
    """The note and card ids of a package with this package_time, in the order rows are
    written (each note, then its cards): consecutive milliseconds from `time`, like ids
    Anki makes.  Anki matches notes by GUID, never by these ids, so they only need to be
    unique within the package and the same for the same sources."""
    return itertools.count(time * 1000)


def slug_for_question(text: str, max_words: int = 4) -> str:
    """A readable card id proposed for a new question, e.g. 'batch-normalization'.

    Used once, when a question is first imported; afterwards the id is stored in the
    card source and never recomputed, so later edits to the question keep it.
    """
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    words = [w for w in re.findall(r"[a-z0-9]+", ascii_text) if w not in _STOP_WORDS]
    return "-".join(words[:max_words]) or "card"
