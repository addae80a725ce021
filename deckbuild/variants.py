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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckbuild.errors import Problem
from deckbuild.model import Card, DeckConfig, MediaFile, StampedNote, Variant
from deckbuild.variant_config import KINDS
from deckbuild.variant_selection import Source, card_facts, criterion_matches, matches, members, retired_facts

if TYPE_CHECKING:
    from deckbuild.release.record import Record


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
    checkpoint: Callable[[], None] | None = None,
) -> VariantPackage:
    """The variant's .apkg: the full deck's stamped notes in `chosen`, under the variant's deck name
    (`checkpoint`: apkg/package.py's, to abandon it)."""
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
        checkpoint=checkpoint,
    )
    return VariantPackage(path, data, len(notes), _cards(data), len(files))


def _cards(data: bytes) -> int:
    """The number of cards genanki wrote (it decides them: templates, cloze numbers)."""
    from deckbuild.apkg.read import read_contents

    return read_contents(data).cards


def build_packages(
    source: Source,
    stamped: Sequence[StampedNote],
    notetype_mods: Mapping[str, int],
    media: Sequence[MediaFile],
    record_extra: Mapping[str, Any],
    keys: Sequence[str],
    chosen: Mapping[str, frozenset[str]] | None = None,
    checkpoint: Callable[[], None] | None = None,
) -> list[VariantPackage]:
    """The packages of the variants named in `keys`, from the full deck's stamped notes.

    `chosen`: a variant's notes decided already (by its release); the others ship what
    matches now and what their last release shipped.  `checkpoint`: see package.
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
        latest = history.description_line(record_extra, key)
        out.append(package(source, variant, stamped, notetype_mods, media, ids, latest, checkpoint))
    return out


def with_variant(config: DeckConfig, variant: Variant) -> DeckConfig:
    """The config with one variant replaced (a release gives it its new version)."""
    import dataclasses

    return dataclasses.replace(config, variants=tuple(variant if v.key == variant.key else v for v in config.variants))
