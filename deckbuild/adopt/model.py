"""What adopt reads from a package or CrowdAnki folder: frozen dataclasses, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SourceTemplate:
    """One card template of a note type, as Anki stores it."""

    name: str
    front: str
    back: str
    id: int | None = None  # Anki's template "id" (None in old packages and CrowdAnki)


@dataclass(frozen=True)
class SourceNotetype:
    """A note type: its identity, schema, templates and CSS."""

    key: str  # how notes name it in the source (its id, or CrowdAnki's uuid)
    name: str
    cloze: bool
    fields: tuple[str, ...]
    templates: tuple[SourceTemplate, ...]
    css: str
    id: int | None = None
    field_ids: tuple[int | None, ...] = ()
    mod: int | None = None
    sort_field: int = 0  # index of the field Anki's browser sorts by


@dataclass(frozen=True)
class SourceNote:
    """A note: GUID, note type, field HTML in order, tags, its deck (full name) and mod."""

    guid: str
    notetype: str  # SourceNotetype.key
    fields: tuple[str, ...]
    tags: tuple[str, ...]
    deck: str
    mod: int | None
    where: str  # how messages name it, e.g. "note 1796171666397"


@dataclass(frozen=True)
class SourceDeck:
    """Everything adopt takes from the source; media holds only files the fields reference."""

    source: str
    notetypes: tuple[SourceNotetype, ...]
    notes: tuple[SourceNote, ...]
    media: Mapping[str, bytes] = field(default_factory=dict)
    descriptions: Mapping[str, str] = field(default_factory=dict)  # deck name -> its description (HTML)
    markdown_descriptions: frozenset[str] = frozenset()  # decks whose description Anki renders as Markdown
