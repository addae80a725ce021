"""Variants: smaller decks cut from the same cards by a filter in deck.yaml's `variants:`.

A variant ships a subset of the full deck's notes exactly as the full deck ships them --
the same GUIDs, note types (same ids), fields, tags and per-note mods -- under its own deck
name and version.  So a learner who imports two variants, or a variant and the full deck,
gets every note once, with one review history; only the deck its cards first arrived in
differs.  Fields are never rewritten per variant: a note whose text differed between two
packages would be updated back and forth by each import.

Which notes a variant ships:
- every card that matches its `include` filter now;
- every note its last release shipped (Anki never removes a note, so a note that stops
  matching keeps shipping and keeps its learners' copies up to date);
- a note retired from the full deck if it matched when it was last active (judged on the
  tags it last shipped with).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckbuild.errors import Location, Problem
from deckbuild.model import DIFFICULTIES, Card, DeckConfig, MediaFile, RenderedNote, StampedNote, Variant

if TYPE_CHECKING:
    from deckbuild.apkg.notetypes import NoteType
    from deckbuild.release.record import Record

KEY = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
KINDS = ("qa", "formula", "fact")

ENTRY_KEYS: dict[str, str] = {
    "name": "The variant's deck name in Anki (default: '<deck name> (<key>)').",
    "version": "Its own semantic version; `deckbuild release --variant KEY` bumps it.",
    "description": "Markdown shown on its overview screen (default: the full deck's).",
    "include": "The filter: every criterion given must match (AND); a criterion's values are alternatives (OR).",
}
CRITERIA: dict[str, str] = {
    "kind": "Card kinds: qa, formula, fact, or the key of a declared note type (notetypes/<key>/).",
    "difficulty": "Difficulties: easy, medium, hard (a cloze card's is inherited from its `of` card).",
    "topics": "Topics; a topic matches itself and every topic under it (optimization matches optimization::lr).",
    "tags": "Anki tags of the note (its own and difficulty::, topic::, source::, kind::), hierarchical like topics.",
    "decks": "Deck names relative to the deck's name (a card's `deck:`); a deck matches itself and its subdecks.",
}


# -- deck.yaml ------------------------------------------------------------------------------


def parse_variants(value: Any, where: Location, deck_name: str) -> tuple[tuple[Variant, ...], list[Problem]]:
    """deck.yaml's `variants:` mapping -> the variants and every problem (E230-E239)."""
    from deckbuild.yamlload import LocatedMap

    if not isinstance(value, LocatedMap):
        kind = type(value).__name__
        return (), [Problem(where, "E230", f"'variants': expected a mapping of variant key to its options; got {kind}")]
    variants: list[Variant] = []
    problems: list[Problem] = []
    for key, entry in value.items():
        key_where = value.key_locs[key]
        if not isinstance(key, str) or not KEY.fullmatch(key):
            problems.append(
                Problem(key_where, "E231", f"variant key {key!r}: expected lower-case letters, digits and '-' (1-40)")
            )
            continue
        variant, entry_problems = _parse_entry(key, entry, value.value_locs[key], key_where, deck_name)
        problems += entry_problems
        if variant is not None:
            variants.append(variant)
    names: dict[str, str] = {deck_name.casefold(): "the full deck"}
    for variant in variants:
        other = names.get(variant.name.casefold())
        if other is not None:
            problems.append(
                Problem(
                    variant.location,
                    "E237",
                    f"variant '{variant.key}': deck name '{variant.name}' is also the name of {other}; Anki matches decks "
                    "by name, so learners could not tell them apart: give it a name of its own",
                )
            )
        names[variant.name.casefold()] = f"variant '{variant.key}'"
    return tuple(variants), problems


def _parse_entry(
    key: str, entry: Any, where: Location, key_where: Location, deck_name: str
) -> tuple[Variant | None, list[Problem]]:
    from deckbuild.yamlload import LocatedMap

    label = f"variant '{key}'"
    if not isinstance(entry, LocatedMap):
        got = type(entry).__name__
        return None, [Problem(where, "E230", f"{label}: expected a mapping with {', '.join(ENTRY_KEYS)}; got {got}")]
    problems = [
        Problem(entry.key_locs[k], "E232", f"{label}: unknown key '{k}'; expected one of {', '.join(ENTRY_KEYS)}")
        for k in entry
        if k not in ENTRY_KEYS
    ]
    for required in ("version", "include"):
        if required not in entry:
            problems.append(Problem(entry.loc, "E233", f"{label}: missing required key '{required}'"))
    for k in ("name", "version", "description"):
        if k in entry and not isinstance(entry[k], str):
            got = f"{type(entry[k]).__name__} {entry[k]!r}"
            problems.append(Problem(entry.value_locs[k], "E234", f"{label}: '{k}': expected text; got {got}"))
    name = entry.get("name", f"{deck_name} ({key})")
    if isinstance(name, str) and not name.strip():
        problems.append(Problem(entry.value_locs["name"], "E234", f"{label}: 'name' must not be empty"))
    from deckbuild.config import SEMVER  # (config imports this module)

    version = entry.get("version")
    if isinstance(version, str) and not SEMVER.fullmatch(version):
        problems.append(
            Problem(
                entry.value_locs["version"], "E234", f"{label}: 'version': expected MAJOR.MINOR.PATCH like 1.0.0; got {version!r}"
            )
        )
    include: tuple[tuple[str, tuple[str, ...]], ...] = ()
    value_locations: dict[str, Location] = {}
    if "include" in entry:
        include, value_locations, include_problems = _parse_include(label, entry["include"], entry.value_locs["include"])
        problems += include_problems
    if problems:
        return None, problems
    assert isinstance(name, str) and isinstance(version, str)
    variant = Variant(
        key=key,
        name=name.strip(),
        version=version,
        description=entry.get("description"),
        include=include,
        location=key_where,
        version_location=entry.value_locs["version"],
        value_locations=value_locations,
    )
    return variant, []


def _parse_include(
    label: str, include: Any, where: Location
) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], dict[str, Location], list[Problem]]:
    from deckbuild.sources import TAG_RULE, TOPIC_PATTERN, tag_problem
    from deckbuild.yamlload import LocatedList, LocatedMap

    if not isinstance(include, LocatedMap) or not include:
        got = "an empty mapping" if isinstance(include, LocatedMap) else type(include).__name__
        return (
            (),
            {},
            [Problem(where, "E235", f"{label}: 'include': expected a mapping of criteria ({', '.join(CRITERIA)}); got {got}")],
        )
    problems: list[Problem] = []
    criteria: list[tuple[str, tuple[str, ...]]] = []
    locations: dict[str, Location] = {}
    for criterion, raw in include.items():
        at = include.value_locs[criterion]
        if criterion not in CRITERIA:
            problems.append(
                Problem(
                    include.key_locs[criterion],
                    "E235",
                    f"{label}: unknown criterion '{criterion}' in 'include'; expected one of {', '.join(CRITERIA)}",
                )
            )
            continue
        values = [raw] if isinstance(raw, str) else raw
        if not isinstance(values, LocatedList | list) or not values or not all(isinstance(v, str) for v in values):
            problems.append(Problem(at, "E236", f"{label}: include '{criterion}': expected a list of text values; got {raw!r}"))
            continue
        allowed: Sequence[str] = {"difficulty": DIFFICULTIES}.get(criterion, ())
        for text in values:
            if allowed and text not in allowed:
                why = f"expected one of {', '.join(allowed)}"
            elif criterion == "kind" and not KEY.fullmatch(text):  # the known kinds are checked with the cards
                why = f"expected one of {', '.join(KINDS)} or a declared note type's key"
            elif criterion == "topics" and not TOPIC_PATTERN.fullmatch(text):
                why = "expected a topic like optimization or optimization::lr-schedule"
            elif criterion == "tags" and tag_problem(text) is not None:
                why = f"expected {TAG_RULE}"
            elif criterion == "decks" and (not text.strip() or any(not p.strip() for p in text.split("::"))):
                why = "expected a deck name like Verbs or Verbs::Irregular"
            else:
                continue
            problems.append(Problem(at, "E236", f"{label}: include '{criterion}': {why}; got {text!r}"))
        criteria.append((criterion, tuple(values)))
        locations[criterion] = at
    return tuple(criteria), locations, problems


# -- which notes a variant ships -------------------------------------------------------------


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


def check_variants(config: DeckConfig, cards: Sequence[Card]) -> list[Problem]:
    """A variant that matches no card is an error (E240); a filter value matching none, a warning (E241)."""
    if not config.variants:
        return []
    by_id = {card.id: card for card in cards}
    facts = [card_facts(card, by_id) for card in cards]
    kinds = [*KINDS, *sorted({f.kind for f in facts} - set(KINDS))]
    problems = []
    for variant in config.variants:
        unknown = [k for c, values in variant.include if c == "kind" for k in values if k not in kinds]
        if unknown:
            problems += [
                Problem(
                    variant.value_locations.get("kind", variant.location),
                    "E236",
                    f"variant '{variant.key}': include 'kind': expected one of {', '.join(kinds)}; got {k!r}",
                )
                for k in unknown
            ]
            continue
        if not any(matches(variant, f) for f in facts):
            problems.append(
                Problem(
                    variant.location,
                    "E240",
                    f"variant '{variant.key}' matches no card; every criterion of 'include' must match "
                    f"({_describe(variant)}): widen the filter or remove the variant",
                )
            )
            continue
        for criterion, values in variant.include:
            for value in values:
                if not any(criterion_matches(criterion, value, f) for f in facts):
                    problems.append(
                        Problem(
                            variant.value_locations.get(criterion, variant.location),
                            "E241",
                            f"variant '{variant.key}': include '{criterion}': {value!r} matches no card (a typo?)",
                            "warning",
                        )
                    )
    return problems


def check_renamed(config: DeckConfig, record_extra: Mapping[str, Any], allow: bool) -> list[Problem]:
    """A variant whose deck name changed since the last build (E243), as E171 for the deck's own name."""
    built = _built_names(record_extra)
    problems = []
    for variant in config.variants:
        before = built.get(variant.key)
        if before is None or before == variant.name or allow:
            continue
        problems.append(
            Problem(
                variant.location,
                "E243",
                f"variant '{variant.key}': deck name changed from '{before}' to '{variant.name}' since the last build; "
                f"Anki matches decks by name, so learners' existing cards would stay in '{before}' and only new cards "
                f"would go to '{variant.name}'. Put back its old name, or build with --allow-identity-change: learners "
                f"then rename the deck in Anki before importing, or `deckbuild push --variant {variant.key}` moves their cards",
            )
        )
    return problems


def remember(record: Record, config: DeckConfig) -> Record:
    """The record with the variants' deck names (what the next build compares with, E243)."""
    from deckbuild.release.identity import IDENTITY_KEY
    from deckbuild.release.record import Record

    ident = record.extra.get(IDENTITY_KEY)
    if not config.variants or not isinstance(ident, Mapping):
        return record
    names = {v.key: v.name for v in config.variants}
    return Record(record.notes, record.notetypes, {**record.extra, IDENTITY_KEY: {**ident, "variants": names}})


def _built_names(record_extra: Mapping[str, Any]) -> dict[str, str]:
    ident = record_extra.get("identity")
    names = ident.get("variants") if isinstance(ident, Mapping) else None
    return {str(k): str(v) for k, v in names.items()} if isinstance(names, Mapping) else {}


def _describe(variant: Variant) -> str:
    return "; ".join(f"{c}: {', '.join(values)}" for c, values in variant.include)


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


# -- packages -----------------------------------------------------------------------------


@dataclass(frozen=True)
class VariantPackage:
    """A variant's package, ready to write."""

    path: Path
    data: bytes
    notes: int
    cards: int
    media: int


def output_path(root: Path, config: DeckConfig, variant: Variant) -> Path:
    """dist/<deck slug>-<key>-<variant version>.apkg."""
    return root / config.output / f"{config.slug}-{variant.key}-{variant.version}.apkg"


def variant_media(notes: Sequence[StampedNote], media: Sequence[MediaFile]) -> list[MediaFile]:
    """The media files the variant's notes show, and the templates' `_` files."""
    from deckbuild.notetypes.media import referenced

    named = {name for s in notes for name in s.note.media}
    for stamped in notes:
        if not stamped.note.media:  # declared notes' fields and retired notes name their files in the HTML
            named.update(name for field in stamped.note.fields for name in referenced(field))
    # `_` files belong to the templates: every one ships, as the notes' templates may name it.
    return [m for m in media if m.name in named or m.name.startswith("_")]


def package(
    source: Source,
    variant: Variant,
    stamped: Sequence[StampedNote],
    notetype_mods: Mapping[str, int],
    media: Sequence[MediaFile],
    chosen: set[str],
    latest: str,
) -> VariantPackage:
    """The variant's .apkg: the full deck's stamped notes in `chosen`, under the variant's deck name."""
    from deckbuild.apkg.package import write_package
    from deckbuild.render import markdown_html, plain

    config = source.config
    notes = [s for s in stamped if s.note.card_id in chosen]
    text = config.description if variant.description is None else variant.description
    full = config.description_html if variant.description is None and config.description_html is not None else None
    description = (markdown_html(text) if full is None else full) + f"<p>Version {plain(variant.version)}</p>"
    if latest:
        description += f"<p>{plain(latest)}</p>"
    files = variant_media(notes, media)
    path = output_path(source.root, config, variant)
    data = write_package(
        path,
        deck_name=variant.name,
        deck_description=description,
        namespace=config.namespace,
        notetypes=source.notetypes,
        notetype_mods=notetype_mods,
        notes=notes,
        media=files,
    )
    return VariantPackage(path, data, len(notes), _cards(data), len(files))


def _cards(data: bytes) -> int:
    """The number of cards genanki wrote (it decides them: templates, cloze numbers)."""
    import io
    import sqlite3
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        db = archive.read("collection.anki2")
    conn = sqlite3.connect(":memory:")
    try:
        conn.deserialize(db)
        return int(conn.execute("select count() from cards").fetchone()[0])
    finally:
        conn.close()


def build_packages(
    source: Source,
    stamped: Sequence[StampedNote],
    notetype_mods: Mapping[str, int],
    media: Sequence[MediaFile],
    record_extra: Mapping[str, Any],
    keys: Sequence[str],
    chosen: Mapping[str, frozenset[str]] | None = None,
) -> list[VariantPackage]:
    """The packages of the variants named in `keys`, from the full deck's stamped notes.

    `chosen`: a variant's notes decided already (by its release); the others ship what
    matches now and what their last release shipped.
    """
    from deckbuild.release import variants as history

    out = []
    for key in keys:
        variant = source.config.variant(key)
        assert variant is not None, key
        ids = set(chosen[key]) if chosen and key in chosen else None
        if ids is None:
            released = history.released_ids(source.root, record_extra, key)
            ids = members(variant, source.cards, retired_facts(source.cards, [s.note for s in stamped]), released)
        out.append(package(source, variant, stamped, notetype_mods, media, ids, history.description_line(record_extra, key)))
    return out


def with_variant(config: DeckConfig, variant: Variant) -> DeckConfig:
    """The config with one variant replaced (a release gives it its new version)."""
    import dataclasses

    return dataclasses.replace(config, variants=tuple(variant if v.key == variant.key else v for v in config.variants))


def retired_facts(cards: Sequence[Card], notes: Sequence[RenderedNote]) -> dict[str, Facts]:
    """The facts of the notes that ship without a card (retired), from their tags."""
    live = {card.id for card in cards}
    return {n.card_id: tag_facts(n.notetype, n.tags) for n in notes if n.card_id not in live}
