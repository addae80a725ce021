"""A variant's own releases: `deckbuild release --variant KEY`.

Each variant has its own version (its entry in deck.yaml), its own published snapshots
(`releases/<key>/<version>.jsonl`) and its own changelog (`CHANGELOG-<key>.md`), made with
the full deck's release machinery (versioning.py): the same comparison, version rule,
retirement and changelog text.  The full deck's release, changelog and package are left
as they are.  The notes come from the full deck, so a variant never retires a note on its
own: a card that left the sources retires in a full-deck release first.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckbuild.errors import LocatedError, Location
from deckbuild.layout import CONFIG_FILE, RELEASES_DIR
from deckbuild.release.versioning import Changes, Snapshot

if TYPE_CHECKING:
    from deckbuild.model import DeckConfig, RenderedNote, Variant
    from deckbuild.release.record import Clock
    from deckbuild.variant_selection import Source

VARIANTS_KEY = "variants"
"""The build record's key holding, per variant, its last release (version, time, summary)."""


def snapshot_path(root: Path, key: str, version: str) -> Path:
    return root / RELEASES_DIR / key / f"{version}.jsonl"


def changelog_name(key: str) -> str:
    return f"CHANGELOG-{key}.md"


def last_release(record_extra: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    releases = record_extra.get(VARIANTS_KEY)
    entry = releases.get(key) if isinstance(releases, Mapping) else None
    return entry if isinstance(entry, Mapping) else None


def latest_snapshot(root: Path, record_extra: Mapping[str, Any], key: str) -> Snapshot | None:
    """The variant's last recorded release, if any."""
    from deckbuild.release.versioning import read_snapshot

    entry = last_release(record_extra, key)
    return None if entry is None else read_snapshot(snapshot_path(root, key, str(entry["version"])))


def released_ids(root: Path, record_extra: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """The card ids the variant's last release shipped (they keep shipping)."""
    snapshot = latest_snapshot(root, record_extra, key)
    return tuple(sorted(snapshot.notes)) if snapshot is not None else ()


def description_line(record_extra: Mapping[str, Any], key: str) -> str:
    """The variant's deck description line about its latest release."""
    entry = last_release(record_extra, key)
    if entry is None:
        return ""
    return f"Latest release {entry['version']}: {entry['summary']}. See {changelog_name(key)} for the cards."


def versioned_deck_yaml(root: Path, variant: Variant, version: str) -> bytes:
    """deck.yaml's bytes with the variant's version set, at the place it is written (comments kept)."""
    text = (root / CONFIG_FILE).read_text("utf-8")
    lines = text.splitlines(keepends=True)
    where = variant.version_location
    line = lines[where.line - 1] if 0 < where.line <= len(lines) else ""
    start = where.col - 1
    found = re.match(r"([\"']?)(\d+\.\d+\.\d+)\1", line[start:])
    if found is None or found.group(2) != variant.version:
        raise LocatedError(where, "E239", f"variant '{variant.key}': cannot find its version {variant.version} here to update")
    quote = found.group(1)
    lines[where.line - 1] = line[:start] + quote + version + quote + line[start + found.end() :]
    return "".join(lines).encode()


@dataclass(frozen=True)
class VariantDecision:
    """What `deckbuild release --variant KEY` ships: the version, changes, notes, and its files."""

    variant: Variant  # with its new version
    changes: Changes
    chosen: frozenset[str]  # card ids of the notes it ships
    extra: Mapping[str, Any]  # the build record's extra with this release remembered
    files: tuple[tuple[Path, bytes], ...]  # its snapshot, deck.yaml, its changelog

    @property
    def version(self) -> str:
        return self.variant.version


def decide_variant(
    source: Source,
    variant: Variant,
    rendered: Sequence[RenderedNote],
    retired: Sequence[RenderedNote],
    full_snapshot: Snapshot | None,
    record_extra: Mapping[str, Any],
    media: Sequence[str],
    clock: Clock,
    *,
    bump: str | None = None,
    allow_schema_change: bool = False,
) -> VariantDecision:
    """Compare the variant's notes with its last release; refuse one that must not ship (E501, E502, E242)."""
    from deckbuild import variant_selection as variant_stage
    from deckbuild.release import versioning

    root, key = source.root, variant.key
    previous = latest_snapshot(root, record_extra, key)
    facts = variant_stage.retired_facts(source.cards, retired)
    chosen = variant_stage.members(variant, source.cards, facts, tuple(previous.notes) if previous else ())
    shipped_retired = full_snapshot.notes if full_snapshot is not None else {}
    live = {card.id for card in source.cards}
    # A retired note goes into the variant's snapshot exactly as the full deck's release recorded it.
    current = {
        n.card_id: versioning.published(n) if n.card_id in live else shipped_retired[n.card_id]
        for n in (*rendered, *retired)
        if n.card_id in chosen
    }
    schemas = {k: nt.schema() for k, nt in source.notetypes.items()}
    changes = _changes(previous, current, schemas, key)
    old_name = (last_release(record_extra, key) or {}).get("name")
    if previous is not None and isinstance(old_name, str) and old_name != variant.name:
        changes = dataclasses.replace(changes, notices=(_renamed_notice(old_name, variant.name),))
    where = variant.version_location
    if previous is None:
        version = versioning.bump(variant.version, bump) if bump else variant.version
    else:
        _part, version = versioning.next_version(
            previous.version,
            changes,
            bump,
            allow_schema_change,
            where,
            subject=f"variant '{key}'",
            command=f"deckbuild release --variant {key}",
        )
    # The one read of the clock for this release, shared with the record's stamps.
    now = clock.now()
    snapshot = versioning.Snapshot(version, now, schemas, tuple(sorted(set(media))), current)
    released = dict(record_extra.get(VARIANTS_KEY) or {})
    released[key] = {"name": variant.name, "version": version, "time": now, "summary": changes.summary()}
    entry = versioning.changelog_entry(version, now, changes, variant.name)
    files = (
        (snapshot_path(root, key, version), snapshot.to_bytes()),
        (root / CONFIG_FILE, versioned_deck_yaml(root, variant, version)),
        (root / changelog_name(key), versioning.changelog_with(root, entry, variant.name, changelog_name(key))),
    )
    new_variant = dataclasses.replace(variant, version=version)
    return VariantDecision(new_variant, changes, frozenset(chosen), {**record_extra, VARIANTS_KEY: released}, files)


def _renamed_notice(old: str, new: str) -> str:
    return (
        f"the deck is now called '{new}' (it was '{old}'). Anki matches decks by name and a plain import leaves your "
        f"existing cards in '{old}': rename that deck to '{new}' in Anki before importing, or let `deckbuild push` "
        "move them (review history kept)."
    )


def require_variant(config: DeckConfig, key: str) -> Variant:
    """The variant named `key`, or E238 naming the ones deck.yaml defines."""
    variant = config.variant(key)
    if variant is None:
        if not config.variants:
            raise LocatedError(Location(CONFIG_FILE), "E238", f"unknown variant '{key}': {CONFIG_FILE} has no `variants:`")
        known = ", ".join(v.key for v in config.variants)
        raise LocatedError(Location(CONFIG_FILE), "E238", f"unknown variant '{key}'; expected one of {known}")
    return variant


def _changes(previous: Snapshot | None, current: Mapping[str, Any], schemas: Mapping[str, Any], key: str) -> Changes:
    """The full deck's comparison, with notes the full deck retired since listed as retired."""
    from deckbuild.release import versioning

    changes = versioning.compare(previous, current, schemas)
    if changes.retired:
        # Notes the variant shipped are shipped for good; one missing now left the sources
        # without a full-deck release retiring it (its notice names the full deck's version).
        gone = ", ".join(n.card_id for n in changes.retired)
        raise LocatedError(
            Location(CONFIG_FILE),
            "E242",
            f"variant '{key}': card(s) {gone} left the sources but the full deck has not released their retirement; "
            "run `deckbuild release` first, then release the variant",
        )
    newly_retired = tuple(n for n in changes.changed if n.retired)
    return dataclasses.replace(changes, changed=tuple(n for n in changes.changed if not n.retired), retired=newly_retired)
