"""What a plan holds: the frozen Plan, the files it would write, and what the preview and the
build line show of it.  Data only: plan.py fills it, apply.py and the commands read it."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from deckbuild.changeset import Baseline, Changeset, changes
from deckbuild.errors import Location, Problem

if TYPE_CHECKING:
    from deckbuild.apkg.notetypes import NoteType
    from deckbuild.importer.update import ImportReport
    from deckbuild.incremental.cache import BuildCache
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
    notetype_mods: Mapping[str, int] = field(default_factory=dict)  # each note type's mod, as the package stamps it
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
    # A build planned without its package (serve): the record file's sha256 as the plan read
    # it; with_package adds the record's output (its bytes are made with the package's).
    record_base: str | None = None
    # What the plan taught the build cache, not yet kept: apply() keeps it once the outputs are
    # written (or drops it if they cannot be), so a failed command leaves the cache as it was.
    cache: BuildCache | None = field(default=None, compare=False, repr=False)

    def keep_cache(self) -> None:
        if self.cache is not None:
            self.cache.keep()

    def drop_cache(self) -> None:
        if self.cache is not None:
            self.cache.drop()

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


def changeset(plan: Plan) -> Changeset:
    """What `plan` ships that the last build did not, or ships differently: its notes against the
    build record and the last release it read, its hand-made images, note types and outputs."""
    base = build_baseline(plan.before, plan.last_release)
    images = {m.name: m.hash for m, _ill in plan.figures.values() if m.source}  # a drawn diagram is named by its content
    return changes_against(
        base, plan, images, files=(o.path for o in plan.outputs if o.base is None or o.base != _sha256(o.data))
    )


def changes_against(base: Baseline, plan: Plan, media: Mapping[str, str], files: Iterable[Path] = ()) -> Changeset:
    """`plan`'s notes, note types and `media` (name -> sha256) against `base`."""
    return changes(
        base,
        [s.note for s in plan.notes],
        field_names={k: nt.fields for k, nt in plan.notetypes.items()},
        notetypes={k: nt.content_hash() for k, nt in plan.notetypes.items()},
        media=media,
        files=files,
    )


def build_baseline(record: Record | None, snapshot: Snapshot | None) -> Baseline:
    """The last build as the record tells it, with the old content of every note the last
    release shipped unchanged since (a note's hash fixes its fields, so the snapshot's are its).

    The record remembers every image that ever shipped; one counts as shipped last time when
    the last release carried it (so a long-dropped one is not reported dropped on every build)."""
    if record is None:
        return Baseline()
    from deckbuild.release.identity import MEDIA_KEY

    known = {}
    if snapshot is not None:
        known = {k: n for k, n in snapshot.notes.items() if (s := record.notes.get(k)) is not None and s.hash == n.hash}
    table = record.extra.get(MEDIA_KEY) or {}
    entries = table.values() if isinstance(table, Mapping) else ()
    media = {str(v["name"]): str(v["hash"]) for v in entries if isinstance(v, Mapping) and "name" in v and "hash" in v}
    if snapshot is not None:
        media = {k: v for k, v in media.items() if k in snapshot.media}
    return Baseline(
        {k: s.hash for k, s in record.notes.items()},
        {s.guid: k for k, s in record.notes.items() if s.guid},
        known,
        {k: s.hash for k, s in record.notetypes.items()},
        media,
    )


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def package_path(root: Path, config: DeckConfig) -> Path:
    return root / config.output / f"{config.slug}-{config.version}.apkg"


def note_facets(cards: Sequence[Card], notes: Sequence[StampedNote]) -> dict[str, Facets]:
    """What every note's tags say about it (kind::, difficulty::, topic::, as Anki will show them), and its card's place."""
    where = {card.id: card.location for card in cards}
    return {
        s.note.card_id: Facets(*tag_facets(s.note.tags), where.get(s.note.card_id))  # None: a retired note (no source left)
        for s in notes
    }


def tag_facets(tags: Sequence[str]) -> tuple[str, str, tuple[str, ...]]:
    """A note's kind, difficulty and topics, as its tags say them."""
    from deckbuild.notes import DIFFICULTY_TAG, KIND_TAG, TOPIC_TAG

    return (
        next((t.removeprefix(KIND_TAG) for t in tags if t.startswith(KIND_TAG)), "qa"),
        next((t.removeprefix(DIFFICULTY_TAG) for t in tags if t.startswith(DIFFICULTY_TAG)), ""),
        tuple(t.removeprefix(TOPIC_TAG) for t in tags if t.startswith(TOPIC_TAG)),
    )


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes; ABSENT if there is no readable file (a folder in the way is
    reported when apply writes)."""
    import hashlib

    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ABSENT
