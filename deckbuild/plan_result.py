"""What a plan holds: the frozen Plan, the files it would write, and what the preview and the
build line show of it.  Data only: plan.py fills it, apply.py and the commands read it."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from deckbuild.errors import Location, Problem

if TYPE_CHECKING:
    from deckbuild.apkg.notetypes import NoteType
    from deckbuild.importer.update import ImportReport
    from deckbuild.model import Card, DeckConfig, MediaFile, StampedNote
    from deckbuild.release.decision import ReleaseDecision
    from deckbuild.release.record import Record
    from deckbuild.release.variants import VariantDecision
    from deckbuild.release.versioning import Snapshot

Goal = Literal["check", "build", "release", "import"]

ABSENT = "absent"
"""Output.base for a file that did not exist when the plan was made."""


@dataclass(frozen=True)
class Output:
    """One file the plan writes: where, its exact bytes, and what the plan saw there."""

    path: Path
    data: bytes
    place: str  # where a failure to write it is reported (deck.yaml's `output`, cards/...)
    # sha256 of the file the plan read to compute `data` (ABSENT if there was none), or None
    # if `data` does not derive from the file's old content; apply refuses to write over a
    # file that changed since (another deckbuild wrote it in between).
    base: str | None = None


@dataclass(frozen=True)
class Facets:
    """What the preview shows about a note besides its fields."""

    kind: str  # its kind:: tag (formula, fact, or an author's own such as scenario); qa without one
    difficulty: str
    topics: tuple[str, ...]
    location: Location | None  # the card's place in cards/; None for a retired note (no source left)


@dataclass(frozen=True)
class Summary:
    """The line a build prints: the package, its notes, cards and media (what changed is the changeset's)."""

    package: Path
    notes: int
    cards: int
    media: int


@dataclass(frozen=True)
class Plan:
    """Everything a command knows before it writes, stage by stage, and every file it would write."""

    root: Path
    goal: Goal
    inputs: str = ""  # fingerprint of everything the build read (incremental/uptodate.py)
    up_to_date: bool = False  # the last build's outputs are current: nothing else was computed
    config: DeckConfig | None = None
    cards: tuple[Card, ...] = ()
    notetypes: Mapping[str, NoteType] = field(default_factory=dict)  # every note type shipped, built-in ones first
    problems: tuple[Problem, ...] = ()  # sorted by place; warnings only, unless goal is "check"
    figures: Mapping[str, tuple[MediaFile, bool]] = field(default_factory=dict)
    notes: tuple[StampedNote, ...] = ()  # every note of the package, in study order, retired ones last
    record: Record | None = None  # the build record as this plan leaves it
    # What was last built, as the plan read it (changeset.py compares the plan with these):
    # the build record before this plan, and the last release's snapshot.
    before: Record | None = None
    last_release: Snapshot | None = None
    release: ReleaseDecision | None = None
    imported: ImportReport | None = None
    outputs: tuple[Output, ...] = ()  # in the order apply renames them into place (crash-safe)
    summary: Summary | None = None
    # deck.yaml's variants (variants.py): the packages written with their note counts; the one
    # variant a `--variant KEY` build or release is about (then the full package is not
    # written); that release's decision.
    variants: tuple[tuple[Path, int], ...] = ()
    only_variant: str | None = None
    variant_release: VariantDecision | None = None

    @functools.cached_property
    def facets(self) -> Mapping[str, Facets]:
        """By card id: what each note's tags say of it, and its card's place (read by the preview
        only, so computed on first use rather than on every build)."""
        return note_facets(self.cards, self.notes)

    @property
    def package(self) -> Path | None:
        """Where the package goes (also for a check, or when up to date); None without a valid deck.yaml."""
        if self.summary is not None:
            return self.summary.package
        if self.config is None:
            return None
        return package_path(self.root, self.config)


def package_path(root: Path, config: DeckConfig) -> Path:
    return root / config.output / f"{config.slug}-{config.version}.apkg"


def note_facets(cards: Sequence[Card], notes: Sequence[StampedNote]) -> dict[str, Facets]:
    """What every note's tags say about it (kind::, difficulty::, topic::, as Anki will show them), and its card's place."""
    from deckbuild.notes import DIFFICULTY_TAG, KIND_TAG, TOPIC_TAG

    where = {card.id: card.location for card in cards}
    facets = {}
    for stamped in notes:
        tags = stamped.note.tags
        facets[stamped.note.card_id] = Facets(
            next((t.removeprefix(KIND_TAG) for t in tags if t.startswith(KIND_TAG)), "qa"),
            next((t.removeprefix(DIFFICULTY_TAG) for t in tags if t.startswith(DIFFICULTY_TAG)), ""),
            tuple(t.removeprefix(TOPIC_TAG) for t in tags if t.startswith(TOPIC_TAG)),
            where.get(stamped.note.card_id),  # None for a retired note: no source left
        )
    return facets


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes; ABSENT if there is no readable file (a folder in the way is
    reported when apply writes)."""
    import hashlib

    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ABSENT
