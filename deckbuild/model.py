"""THE data model: frozen dataclasses that every stage reads and returns.  No I/O here."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from deckbuild.errors import Location

CardKind = Literal["qa", "formula", "fact", "note"]  # "note": a card of a declared note type
Progress = Callable[[int, int, str], None]
"""progress(done, total, what): called as a long stage takes up each item."""
DIFFICULTIES = ("easy", "medium", "hard")
RETIRED_TAG = "retired"
"""The tag of a note whose card left the sources: it keeps shipping, so learners can find it."""


@dataclass(frozen=True)
class Variant:
    """One `variants:` entry of deck.yaml: a smaller deck cut from the same cards (variants.py)."""

    key: str
    name: str  # its deck name in Anki
    version: str
    description: str | None  # None: the full deck's
    include: tuple[tuple[str, tuple[str, ...]], ...]  # (criterion, values), in deck.yaml's order
    location: Location
    version_location: Location  # where its version is written (a release rewrites it there)
    value_locations: Mapping[str, Location] = field(default_factory=dict, compare=False)  # per criterion


@dataclass(frozen=True)
class DeckConfig:
    """deck.yaml, validated."""

    name: str
    namespace: str
    version: str
    description: str
    output: str
    location: Location
    variants: tuple[Variant, ...] = ()
    description_html: str | None = None  # shipped as written, without the version line (adopted decks)
    sources: tuple[tuple[str, str], ...] = ()  # (document, title): what a card's Source field shows

    def variant(self, key: str) -> Variant | None:
        return next((v for v in self.variants if v.key == key), None)

    @property
    def slug(self) -> str:
        return slugify(self.name)


@dataclass(frozen=True)
class Figure:
    """An image shown under the answer: a generated diagram or a file from media/."""

    alt: str
    diagram: str | None = None
    params: tuple[tuple[str, Any], ...] = ()
    file: str | None = None
    location: Location | None = None

    def params_dict(self) -> dict[str, Any]:
        return dict(self.params)


@dataclass(frozen=True)
class Card:
    """One authored card, as written in cards/*.yaml (not yet rendered)."""

    id: str
    kind: CardKind
    location: Location
    question: str = ""
    answer: str = ""
    details: str = ""
    formula: str = ""
    fact: str = ""
    context: str = ""
    of: str = ""
    difficulty: str = ""
    topics: tuple[str, ...] = ()
    source: str = ""
    related: tuple[str, ...] = ()
    duplicate_of: str = ""
    tags: tuple[str, ...] = ()
    figure: Figure | None = None
    missing_code: bool = False
    retired: bool = False
    previous_ids: tuple[str, ...] = ()  # ids the card had before (oldest first): its GUID follows the first
    notetype: str = ""  # kind "note": the key of its declared note type (notetypes/<key>/)
    note_fields: tuple[tuple[str, str, bool], ...] = ()  # kind "note": (field, text, text is HTML), as written
    deck: str = ""  # its subdeck under the deck's name ("Verbs" = "<name>::Verbs"); "" = the deck itself
    guid: str = ""  # an existing note's GUID to keep (adopt); overrides the derived one
    lint: tuple[tuple[str, str], ...] = ()  # (code, reason): learning-lint warnings the card silences
    key_locations: Mapping[str, Location] = field(default_factory=dict, compare=False)

    def where(self, key: str) -> Location:
        """The location of one key's value, falling back to the card's start."""
        return self.key_locations.get(key, self.location)


@dataclass(frozen=True)
class MediaFile:
    """A file that goes into the package under a flat, unique name."""

    name: str
    path: Path
    source: str = ""  # a hand-made image: its file name in media/ (the build record's key)
    hash: str = ""  # ... and the sha256 of its bytes


@dataclass(frozen=True)
class RenderedNote:
    """A note ready for packaging: field HTML in note type order, tags, identity."""

    card_id: str
    guid: str
    notetype: str
    fields: tuple[str, ...]
    tags: tuple[str, ...]
    due: int
    content_hash: str
    media: tuple[str, ...] = ()
    previous_ids: tuple[str, ...] = ()  # the card's earlier ids: its mod must pass theirs
    deck: str = ""  # its subdeck under the deck's name; "" = the deck itself

    @property
    def retired(self) -> bool:
        """Shipped as a retired note (so a changeset's baseline can be made of rendered notes)."""
        return RETIRED_TAG in self.tags


@dataclass(frozen=True)
class StampedNote:
    """A rendered note with the modification time Anki uses to decide on updates."""

    note: RenderedNote
    mod: int


def content_hash(notetype: str, fields: Sequence[str], tags: Sequence[str]) -> str:
    """What decides whether a note changed: its note type, fields and tags (not its position)."""
    payload = _JSON.encode([notetype, list(fields), list(tags)])
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


_JSON = json.JSONEncoder(ensure_ascii=False)
"""json.dumps(..., ensure_ascii=False)'s encoder, made once (dumps makes one per call)."""


def slugify(text: str) -> str:
    """A file- and tag-safe slug: lower-case ASCII words joined by '-'."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return "-".join(re.findall(r"[a-z0-9]+", ascii_text)) or "deck"
