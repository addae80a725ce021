"""What makes the learner's Anki recognise the deck: namespace, deck name, ids, note kinds.

Anki matches notes by GUID (derived from the namespace and the card's id, or the first of
its `previous_ids`) and decks by name, and it never tells the learner when an import
re-identified something.  So the build record remembers the deck's namespace and name,
each note's kind, and what hand-made media shipped; this stage compares the sources with
it and refuses (before anything is written) an edit that would make notes new, split the
deck, strand a note, or switch a note between kinds.
"""

from __future__ import annotations

import dataclasses
import difflib
import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from deckbuild.errors import LocatedError, Location, Problem
from deckbuild.incremental.memo import FileChecks, Memo
from deckbuild.layout import CONFIG_FILE
from deckbuild.model import Card, DeckConfig, MediaFile
from deckbuild.release.record import Record
from deckbuild.release.versioning import Changes, Snapshot

IDENTITY_KEY = "identity"
MEDIA_KEY = "media"
FLAG = "--allow-identity-change"
# Two fronts this similar (difflib ratio) look like one card under a new id.
RENAME_SIMILARITY = 0.85


@dataclass(frozen=True)
class Known:
    """What earlier builds and the last release know: identity, and each id's note kind."""

    namespace: str | None
    name: str | None
    kinds: Mapping[str, str]  # card id -> note type key ("qa", "cloze")
    release: str | None  # version of the last release, if any
    released_fronts: Mapping[str, str]  # live (not retired) released id -> front text
    released_guids: Mapping[str, str]  # released id -> its GUID (a record older than identity)
    built_guids: Mapping[str, str] = dataclasses.field(default_factory=dict)  # id -> GUID it was last built with


def notetype_of(card: Card) -> str:
    """The note type key a card becomes (the same keys as apkg/notetypes.py)."""
    if card.kind == "note":
        return card.notetype
    return "qa" if card.kind == "qa" else "cloze"


def remember(record: Record, config: DeckConfig, media: Sequence[MediaFile]) -> Record:
    """The record to write: with the deck's identity and the hand-made media that now ship."""
    from deckbuild.media import media_record

    extra = dict(record.extra)
    extra[IDENTITY_KEY] = {"namespace": config.namespace, "name": config.name}
    shipped = extra.get(MEDIA_KEY) or {}
    images = {m.source: m for m in media if m.source}
    table = media_record(images, shipped if isinstance(shipped, Mapping) else {})
    if table:
        extra[MEDIA_KEY] = table
    return Record(record.notes, record.notetypes, extra)


def known(root: Path) -> Known:
    """Read the build record and the last release (raises E160/E503 if unreadable)."""
    from deckbuild.release import record as record_stage
    from deckbuild.release import versioning

    record = record_stage.load_record(root)
    return known_from(record, versioning.latest_snapshot(root, record.extra))


def known_from(record: Record, snapshot: Snapshot | None, memo: Memo | None = None) -> Known:
    """What the build record and the last release (already read, e.g. by the plan) say; `memo`
    (serve) keeps it for the next plan that reads the same record and snapshot objects."""
    kept = memo.derived.get("known") if memo is not None else None
    if kept is not None and kept[0] is record and kept[1] is snapshot and isinstance(kept[2], Known):
        return kept[2]
    known = _known_from(record, snapshot)
    if memo is not None:
        memo.derived["known"] = (record, snapshot, known)
    return known


def _known_from(record: Record, snapshot: Snapshot | None) -> Known:
    ident = record.extra.get(IDENTITY_KEY)
    ident = ident if isinstance(ident, Mapping) else {}
    kinds = {card_id: stamp.notetype for card_id, stamp in record.notes.items() if stamp.notetype}
    fronts: dict[str, str] = {}
    guids: dict[str, str] = {}
    if snapshot is not None:
        for card_id, note in snapshot.notes.items():
            guids[card_id] = note.guid
            kinds.setdefault(card_id, note.notetype)
            if not note.retired:
                fronts[card_id] = note.front
    namespace, name = ident.get("namespace"), ident.get("name")
    return Known(
        str(namespace) if namespace else None,
        str(name) if name else None,
        kinds,
        snapshot.version if snapshot else None,
        fronts,
        guids,
        {card_id: stamp.guid for card_id, stamp in record.notes.items() if stamp.guid},
    )


def check_identity(
    root: Path,
    config: DeckConfig,
    cards: Sequence[Card],
    *,
    allow_change: bool = False,
    releasing: bool = False,
    past: Known | None = None,
    files: Sequence[FileChecks] | None = None,
) -> list[Problem]:
    """Every identity problem: a changed namespace or deck name, bad previous_ids, kind changes,
    and (warnings) cards that look like a renamed released card.  `past`: known(root), if read
    already.  `files`: the cards' files' shares of the checks (serve: file_checks.py), which
    spare walking the files whose cards all have the GUID and note type they were last built with."""
    if past is None:
        try:
            past = known(root)
        except LocatedError:
            return []  # an unreadable record or snapshot: build and release report it (E160, E503)
    problems = _check_deck(root, config, past, allow_change, releasing)
    if files is None:
        problems += _check_previous_ids(cards)
        problems += _check_moved(config, cards, past)
        problems += _check_kept_guids(config, cards, past)
        problems += _check_kinds(cards, past)
    else:
        problems += _check_files(config, cards, files, past)
    problems += _looks_renamed(cards, past)
    return problems


def _check_files(config: DeckConfig, cards: Sequence[Card], files: Sequence[FileChecks], past: Known) -> list[Problem]:
    """check_identity's checks of each card, file by file: the same problems in the same order.
    The GUIDs (E225) and note types (E172) of a file's cards without previous_ids are compared
    with the last build's in C; only a file where one differs (or a card is new) is walked."""
    renamed = [card for file in files for card in file.renamed]
    problems = _check_previous_ids(cards, renamed)
    problems += _check_moved(config, renamed, past)  # it checks only cards with previous_ids
    guids: list[Problem] = []
    kinds: list[Problem] = []
    guids_kept = past.namespace in (None, config.namespace)  # else E170, and no E225
    built, known_kind = past.built_guids.get, past.kinds.get
    for file in files:
        if guids_kept and not all(map(operator.eq, map(built, file.shipped), file.shipped.values())):
            guids += _check_kept_guids(config, file.cards, past)
        if file.renamed or not all(map(operator.eq, map(known_kind, file.kinds), file.kinds.values())):
            kinds += _check_kinds(file.cards, past)
    return problems + guids + kinds


def namespace_changed(root: Path, config: DeckConfig, past: Known | None = None) -> str | None:
    """The recorded namespace if deck.yaml now gives another one, else None."""
    past = past or known(root)
    if _released_under_other_namespace(config, past):
        return f"the namespace of release {past.release}"
    return past.namespace if past.namespace is not None and past.namespace != config.namespace else None


def deck_renamed(root: Path, config: DeckConfig, past: Known | None = None) -> str | None:
    """The recorded deck name if deck.yaml now gives another one, else None."""
    past = past or known(root)
    return past.name if past.name is not None and past.name != config.name else None


def _key_location(root: Path, key: str) -> Location:
    """Where `key:` is written in deck.yaml (its value's column), for messages."""
    try:
        lines = (root / CONFIG_FILE).read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return Location(CONFIG_FILE)
    for number, line in enumerate(lines, 1):
        found = re.match(rf"^{key}:[ \t]*", line)
        if found:
            return Location(CONFIG_FILE, number, found.end() + 1)
    return Location(CONFIG_FILE)


def _released_under_other_namespace(config: DeckConfig, past: Known) -> bool:
    """A record from before identity was recorded: do the last release's GUIDs fit the namespace?"""
    from deckbuild.apkg.ids import note_guid

    if past.namespace is not None or not past.released_guids:
        return False
    # A released note's GUID derives from its own id or its original (previous) id; if not
    # a single one derives from its own id under this namespace, the namespace changed.
    return not any(guid == note_guid(config.namespace, card_id) for card_id, guid in past.released_guids.items())


def _check_deck(root: Path, config: DeckConfig, past: Known, allow: bool, releasing: bool) -> list[Problem]:
    problems = []
    inferred = _released_under_other_namespace(config, past)
    if (past.namespace is not None and past.namespace != config.namespace) or inferred:
        was = f"'{past.namespace}'" if not inferred else f"the one release {past.release} was built with"
        back = f"`namespace: {past.namespace}`" if not inferred else "the namespace of that release"
        if not allow:
            how = (
                f"Put back {back}. To start a new deck on purpose, release it as a new major "
                f"version: deckbuild release --bump major {FLAG}"
            )
        elif not releasing:
            how = f"A namespace change ships only as a major release: deckbuild release --bump major {FLAG}"
        else:
            how = ""
        if how:
            problems.append(
                Problem(
                    _key_location(root, "namespace"),
                    "E170",
                    f"'namespace' changed from {was} to '{config.namespace}' since the last build; every "
                    "note's GUID derives from it, so Anki would import every note as new: learners would get a "
                    f"duplicate of each card without its review history. {how}",
                )
            )
    if past.name is not None and past.name != config.name and not allow:
        problems.append(
            Problem(
                _key_location(root, "name"),
                "E171",
                f"deck 'name' changed from '{past.name}' to '{config.name}' since the last build; Anki matches decks by "
                f"name, so learners' existing cards would stay in '{past.name}' and only new cards would go to "
                f"'{config.name}': the deck splits. Put back `name: {past.name}`, or, to rename it on purpose, build "
                f"with {FLAG} and tell learners to rename the deck in Anki (Browse > deck > Rename) before importing",
            )
        )
    return problems


def _check_previous_ids(cards: Sequence[Card], renamed: Sequence[Card] | None = None) -> list[Problem]:
    """E126 for previous_ids; `renamed`: the cards that have some, if known already."""
    problems: list[Problem] = []
    renamed = [card for card in cards if card.previous_ids] if renamed is None else renamed
    if not renamed:
        return problems
    live = {card.id: card for card in cards}
    claimed: dict[str, Card] = {}
    for card in renamed:
        for old in card.previous_ids:
            where = card.where("previous_ids")
            if old == card.id:
                problems.append(Problem(where, "E126", f"card '{card.id}': 'previous_ids' names the card's own id"))
            elif old in live:
                problems.append(
                    Problem(
                        where,
                        "E126",
                        f"card '{card.id}': previous id '{old}' is still the id of a card (at {live[old].where('id')}); "
                        "one note cannot be two cards: remove it from previous_ids, or rename that card",
                    )
                )
            elif old in claimed and claimed[old] is not card:
                problems.append(
                    Problem(
                        where,
                        "E126",
                        f"card '{card.id}': previous id '{old}' is also claimed by card '{claimed[old].id}' (at "
                        f"{claimed[old].where('previous_ids')}); one old note can follow only one card: keep it on one",
                    )
                )
            else:
                claimed[old] = card
    return problems


def _check_moved(config: DeckConfig, cards: Sequence[Card], past: Known) -> list[Problem]:
    """A card that already shipped under its own GUID must not move onto another note."""
    from deckbuild.apkg.ids import card_guid

    problems: list[Problem] = []
    if past.namespace not in (None, config.namespace):
        return problems  # a new namespace (E170)
    for card in cards:
        if not card.previous_ids:  # most cards: asked first, before two lookups
            continue
        shipped = past.built_guids.get(card.id) or past.released_guids.get(card.id)
        if shipped is not None and shipped != card_guid(config.namespace, card.id, card.previous_ids):
            problems.append(
                Problem(
                    card.where("previous_ids"),
                    "E126",
                    f"card '{card.id}' already shipped as a note of its own; previous_ids [{', '.join(card.previous_ids)}] "
                    "would move it onto another note and strand its own (and its history): remove previous_ids",
                )
            )
    return problems


def _check_kept_guids(config: DeckConfig, cards: Sequence[Card], past: Known) -> list[Problem]:
    """A card keeps the GUID it shipped with: a `guid:` edited or removed would make a new note (E225)."""
    from deckbuild.apkg.ids import note_guid

    problems: list[Problem] = []
    if past.namespace not in (None, config.namespace):
        return problems  # a new namespace (E170)
    built, released, namespace = past.built_guids.get, past.released_guids.get, config.namespace
    for card in cards:  # every card of the deck, every build: lookups bound once
        if card.previous_ids:
            continue  # renamed: E126
        shipped = built(card.id) or released(card.id)
        if shipped is None:
            continue  # new
        now = card.guid or note_guid(namespace, card.id)
        if now != shipped:
            problems.append(
                Problem(
                    card.where("guid") if card.guid else card.where("id"),
                    "E225",
                    f"card '{card.id}' shipped as the note with GUID {shipped!r} and would now be {now!r}: Anki would "
                    f"add a new note and leave the learner's note, and its history, behind; keep guid: {shipped!r}",
                )
            )
    return problems


def _check_kinds(cards: Sequence[Card], past: Known) -> list[Problem]:
    problems = []
    kinds = past.kinds.get
    for card in cards:
        if not card.previous_ids:  # most cards: one lookup, and no tuple of ids
            before = kinds(card.id)
            if before is None or before == notetype_of(card):
                continue
        kind = notetype_of(card)
        for ident in (card.id, *card.previous_ids):
            before = kinds(ident)
            if before is not None and before != kind:
                via = "" if ident == card.id else f" (through previous id '{ident}')"
                problems.append(
                    Problem(
                        card.location,
                        "E172",
                        f"card '{card.id}'{via} was shipped as a {_kind_name(before)} note and is now a "
                        f"{_kind_name(kind)} note; Anki marks such a note conflicting and never updates it. Keep its "
                        "kind, or give the new card a new id (the old note then retires with its history)",
                    )
                )
                break
    return problems


def _kind_name(notetype: str) -> str:
    return {"qa": "question/answer", "cloze": "cloze"}.get(notetype, notetype)


def _normal(text: str) -> str:
    text = re.sub(r"<[^>]+>|[*_`#>\\\[\]()]", " ", text)
    return re.sub(r"\s+", " ", text).strip().lower()[:160]


def card_front(card: Card) -> str:
    """The text a released note's `front` is compared with."""
    return card.question or card.context or card.formula or card.fact


def _looks_renamed(cards: Sequence[Card], past: Known) -> list[Problem]:
    if not past.released_fronts:
        return []
    claimed = {old for card in cards for old in card.previous_ids}
    live = {card.id for card in cards}
    gone = {k: _normal(v) for k, v in past.released_fronts.items() if k not in live and k not in claimed}
    new = [card for card in cards if card.id not in past.released_fronts and not card.previous_ids]
    if not gone or not new or len(gone) * len(new) > 250_000:
        return []
    problems = []
    for card in new:
        front = _normal(card_front(card))
        best: tuple[float, str] | None = None
        for old_id, old_front in gone.items():
            matcher = difflib.SequenceMatcher(None, front, old_front)
            if matcher.real_quick_ratio() < RENAME_SIMILARITY or matcher.quick_ratio() < RENAME_SIMILARITY:
                continue
            ratio = matcher.ratio()
            if ratio >= RENAME_SIMILARITY and (best is None or ratio > best[0]):
                best = (ratio, old_id)
        if best is not None:
            problems.append(
                Problem(
                    card.where("id"),
                    "E173",
                    f"card '{card.id}' looks like a rename of '{best[1]}' (released in {past.release}, "
                    f"{best[0]:.0%} the same front) which is no longer in the sources; released like this, '{best[1]}' "
                    f"retires and '{card.id}' is a new note without its review history. If it is a rename, add "
                    f"`previous_ids: [{best[1]}]` to the card to keep the learner's note",
                    "warning",
                )
            )
    return problems


def release_changes(root: Path, config: DeckConfig, changes: Changes, past: Known | None = None) -> Changes:
    """The release's changes with what a new namespace or deck name means for learners."""
    past = past or known(root)
    old_namespace = namespace_changed(root, config, past)
    old_name = deck_renamed(root, config, past)
    breaking: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    if old_namespace is not None:
        breaking = (
            f"the deck's namespace changed from `{old_namespace}` to `{config.namespace}`: Anki imports every note as "
            "new, without review history. Learners who had an earlier version get a second copy of every card; "
            "they should delete or suspend the old deck's notes.",
        )
    if old_name is not None:
        notices = (
            f"the deck is now called '{config.name}' (it was '{old_name}'). Anki matches decks by name: before "
            f"importing, rename your deck '{old_name}' to '{config.name}' in Anki, or your existing cards stay in "
            f"'{old_name}' and only new cards go to '{config.name}'.",
        )
    return dataclasses.replace(changes, breaking=breaking, notices=notices)


def refuse_minor_namespace_change(changes: Changes, part: str) -> None:
    """A namespace change makes every note new: it ships only as a major release."""
    if changes.breaking and part != "major":
        raise LocatedError(
            Location(CONFIG_FILE),
            "E170",
            f"the namespace changed, so every note is new to Anki; release it as a major version: "
            f"deckbuild release --bump major {FLAG}",
        )
