"""deck.yaml's `variants:` key, parsed into Variant records with the rest of the config."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from deckbuild.errors import Location, Problem
from deckbuild.limits import SEMVER, TAG_RULE, TOPIC_PATTERN, tag_problem
from deckbuild.model import DIFFICULTIES, Variant

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
