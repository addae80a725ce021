"""One entry of a card file -> a Card: every key, type and allowed value checked on its own.

sources.py reads the files and hands each entry here; checks that need the whole deck
(duplicate ids, references, media) live in validate.py.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from deckbuild.apkg.ids import CARD_ID_PATTERN
from deckbuild.errors import Location, Problem, close_key
from deckbuild.limits import MAX_TEXT_CHARS, TAG_RULE, TOPIC_PATTERN, tag_problem
from deckbuild.lint.silences import parse_silences
from deckbuild.model import DIFFICULTIES, Card, CardKind, Figure
from deckbuild.yamlload import LocatedList, LocatedMap

if TYPE_CHECKING:
    pass

# Every key a card may have, and what it holds.  The README documents the same list.
CARD_KEYS: dict[str, str] = {
    "id": "unique, stable card id",
    "question": "Markdown: the front of a question/answer card",
    "answer": "Markdown: the short answer",
    "details": "Markdown: more explanation, shown after the answer",
    "formula": "LaTeX with {{cN::...}} deletions: a formula cloze card",
    "fact": "Markdown with {{cN::...}} deletions: a fact cloze card",
    "context": "Markdown shown above a formula or fact",
    "of": "id of the question card a formula or fact comes from",
    "difficulty": "easy | medium | hard",
    "topics": "list of topic::subtopic",
    "source": "where the card comes from: document#place",
    "related": "list of related card ids",
    "duplicate_of": "id of a card this one overlaps",
    "tags": "list of extra Anki tags",
    "diagram": "a generated image: name, params, alt",
    "image": "an image from media/: file, alt",
    "missing_code": "true if the source's code example was lost",
    "previous_ids": "ids this card had before, oldest first: it keeps the note (and history) of the first",
    "origin": "written by `deckbuild import`: where the card came from",
    "notetype": "the key of a note type declared in notetypes/<key>/: the card is a note of that type",
    "fields": "with notetype: field name -> Markdown text, or {html: ...}",
    "deck": "a subdeck under the deck's name: Verbs, or Verbs::Irregular",
    "guid": "an existing note's GUID to keep (written by deckbuild adopt)",
    "lint": "learning-lint warnings this card silences: {CODE: the reason the warning is wrong here}",
}
DECLARED_KEYS = ("id", "notetype", "fields", "tags", "deck", "guid", "previous_ids", "origin", "lint")
"""The keys a card of a declared note type may have (the rest belong to the built-in kinds)."""
TEXT_KINDS: dict[str, CardKind] = {"question": "qa", "formula": "formula", "fact": "fact"}


def _text(item: LocatedMap, key: str, problems: list[Problem]) -> str:
    value = item.get(key)
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        problems.append(Problem(item.value_locs[key], "E106", f"'{key}': expected text; got {_kind(value)}"))
        return ""
    if len(value) > MAX_TEXT_CHARS:
        problems.append(
            Problem(
                item.value_locs[key],
                "E116",
                f"'{key}' is {len(value):,} characters long; the limit is {MAX_TEXT_CHARS:,}: split it into several cards",
            )
        )
    return value


def _word_list(item: LocatedMap, key: str, problems: list[Problem]) -> tuple[str, ...]:
    value = item.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(Problem(item.value_locs[key], "E106", f"'{key}': expected a list of words; got {_kind(value)}"))
        return ()
    return tuple(v.strip() for v in value)


def _kind(value: Any) -> str:
    names = {dict: "a mapping", list: "a list", bool: "true/false", int: "a number", float: "a number", str: "text"}
    for cls in (LocatedMap, LocatedList):
        if isinstance(value, cls):
            return names[cls.__mro__[1]]
    return names.get(type(value), type(value).__name__)


def card_from(item: Any, loc: Location, problems: list[Problem], default_deck: str = "") -> Card | None:
    if not isinstance(item, LocatedMap):
        problems.append(Problem(loc, "E103", f"expected a card (a mapping with id, question, answer, ...); got {_kind(item)}"))
        return None
    before = len(problems)
    misspelled: set[str] = set()  # keys the author meant, judged from unknown ones
    for key in item:
        if key not in CARD_KEYS:
            meant = close_key(key, CARD_KEYS, item)
            hint = f"did you mean '{meant}'? " if meant else ""
            if meant:
                misspelled.add(meant)
            problems.append(
                Problem(item.key_locs[key], "E104", f"unknown key '{key}'; {hint}expected one of {', '.join(CARD_KEYS)}")
            )
    card = _checked_card(item, loc, problems, default_deck, misspelled)
    card_id = item.get("id")
    if card is None and isinstance(card_id, str) and CARD_ID_PATTERN.fullmatch(card_id):
        # The card exists but is invalid: its problems name it, so references to it are not dangling.
        problems[before:] = [replace(p, subject=card_id) if p.severity == "error" else p for p in problems[before:]]
    return card


def _checked_card(
    item: LocatedMap, loc: Location, problems: list[Problem], default_deck: str, misspelled: set[str]
) -> Card | None:
    card_id = item.get("id")
    if card_id is None:
        problems.append(Problem(loc, "E105", "card has no 'id'; every card needs a unique, stable id"))
        return None
    if not isinstance(card_id, str) or not CARD_ID_PATTERN.fullmatch(card_id):
        problems.append(
            Problem(
                item.value_locs["id"],
                "E109",
                f"'id': expected lower-case letters, digits, '.', '_', '-' (1-80 characters); got {card_id!r}",
            )
        )
        return None
    if "notetype" in item:
        return _declared_card(item, loc, card_id, problems, default_deck)
    if "fields" in item:
        problems.append(
            Problem(
                item.key_locs["fields"],
                "E214",
                f"card '{card_id}': 'fields' needs 'notetype' (a note type declared in notetypes/)",
            )
        )
        return None
    kinds = [key for key in TEXT_KINDS if key in item]
    if len(kinds) != 1:
        found = " and ".join(kinds) if kinds else "none of them"
        problems.append(
            Problem(
                loc,
                "E105" if not kinds else "E120",
                f"card '{card_id}': expected exactly one of question, formula, fact; got {found}",
            )
        )
        return None
    kind = TEXT_KINDS[kinds[0]]
    before = len(problems)
    fields = {
        key: _text(item, key, problems)
        for key in ("question", "answer", "details", "formula", "fact", "context", "of", "source", "duplicate_of")
    }
    if kind == "qa":
        for key in ("question", "answer"):
            if key in misspelled and key not in item:  # E104 already says "did you mean"
                continue
            if not fields[key].strip() and isinstance(item.get(key), (str, type(None))):  # wrong type: E106
                code = "E105" if key not in item else "E107"
                problems.append(
                    Problem(item.value_locs.get(key, loc), code, f"card '{card_id}': '{key}' is required and must not be empty")
                )
        for key in ("formula", "fact", "context", "of"):
            if key in item:
                problems.append(
                    Problem(
                        item.key_locs[key], "E120", f"card '{card_id}': '{key}' belongs to formula/fact cards, not question cards"
                    )
                )
    else:
        if not fields[kind].strip():
            problems.append(Problem(item.value_locs[kind], "E107", f"card '{card_id}': '{kind}' must not be empty"))
        for key in ("question", "answer"):
            if key in item:
                problems.append(
                    Problem(item.key_locs[key], "E120", f"card '{card_id}': '{key}' belongs to question cards, not {kind} cards")
                )
    difficulty = fields_difficulty(item, card_id, kind, problems)
    topics = _word_list(item, "topics", problems)
    if kind == "qa" and not topics and "topics" not in item:
        problems.append(Problem(loc, "E105", f"card '{card_id}': missing required key 'topics' (at least one topic::subtopic)"))
    elif "topics" in item and not topics and isinstance(item["topics"], (list, str)):
        problems.append(Problem(item.value_locs["topics"], "E107", f"card '{card_id}': 'topics' must list at least one topic"))
    for topic in topics:
        if not TOPIC_PATTERN.fullmatch(topic):
            problems.append(
                Problem(
                    item.value_locs["topics"],
                    "E107",
                    f"card '{card_id}': topic '{topic}': expected lower-case words joined by '::', like optimization::lr-schedule",
                )
            )
    tags = _tags(item, card_id, problems)
    related = _word_list(item, "related", problems)
    previous_ids = _word_list(item, "previous_ids", problems)
    for old in previous_ids:
        if not CARD_ID_PATTERN.fullmatch(old):
            problems.append(
                Problem(
                    item.value_locs["previous_ids"],
                    "E109",
                    f"card '{card_id}': previous id {old!r}: expected an id (lower-case letters, digits, '.', '_', '-')",
                )
            )
    if len(set(previous_ids)) != len(previous_ids):
        problems.append(Problem(item.value_locs["previous_ids"], "E126", f"card '{card_id}': 'previous_ids' lists an id twice"))
    missing_code = item.get("missing_code", False)
    if not isinstance(missing_code, bool):
        problems.append(
            Problem(item.value_locs["missing_code"], "E106", f"'missing_code': expected true or false; got {missing_code!r}")
        )
        missing_code = False
    if "origin" in item and not isinstance(item["origin"], dict):
        problems.append(Problem(item.value_locs["origin"], "E106", "'origin': expected a mapping (written by deckbuild import)"))
    figure = _figure(item, card_id, problems)
    deck, guid = _deck_and_guid(item, card_id, previous_ids, default_deck, problems)
    silences, silence_locations = parse_silences(item, card_id, problems) if "lint" in item else ((), {})
    if len(problems) > before:
        return None
    key_locations = {**item.value_locs, **silence_locations}
    return Card(
        id=card_id,
        kind=kind,
        location=loc,
        question=fields["question"],
        answer=fields["answer"],
        details=fields["details"],
        formula=fields["formula"],
        fact=fields["fact"],
        context=fields["context"],
        of=fields["of"].strip(),
        difficulty=difficulty,
        topics=topics,
        source=fields["source"].strip(),
        related=related,
        duplicate_of=fields["duplicate_of"].strip(),
        tags=tags,
        figure=figure,
        missing_code=missing_code,
        previous_ids=previous_ids,
        deck=deck,
        guid=guid,
        lint=silences,
        key_locations=key_locations,
    )


def _deck_and_guid(
    item: LocatedMap, card_id: str, previous_ids: tuple[str, ...], default_deck: str, problems: list[Problem]
) -> tuple[str, str]:
    """The card's subdeck (its own `deck:` or its file's) and its given GUID ('' = derived)."""
    from deckbuild.notetypes.fields import GUID_PATTERN, check_deck

    deck = check_deck(item["deck"], item.value_locs["deck"], card_id, problems) if "deck" in item else default_deck
    guid = item.get("guid", "")
    if "guid" in item:
        if not isinstance(guid, str) or not GUID_PATTERN.fullmatch(guid):
            problems.append(
                Problem(
                    item.value_locs["guid"],
                    "E221",
                    f"card '{card_id}': 'guid': expected 1-64 printable ASCII characters without spaces; got {guid!r}",
                )
            )
            guid = ""
        elif previous_ids:
            problems.append(
                Problem(
                    item.key_locs["guid"],
                    "E221",
                    f"card '{card_id}': give 'guid' or 'previous_ids', not both (each decides the note's GUID)",
                )
            )
    return deck, str(guid)


def _tags(item: LocatedMap, card_id: str, problems: list[Problem]) -> tuple[str, ...]:
    """The card's tags: any tag Anki stores as written, on every kind of card."""
    tags = _word_list(item, "tags", problems)
    for tag in tags:
        why = tag_problem(tag)
        if why is not None:
            problems.append(
                Problem(item.value_locs["tags"], "E107", f"card '{card_id}': tag {tag!r}: expected {TAG_RULE}; {why}")
            )
    return tags


def _declared_card(item: LocatedMap, loc: Location, card_id: str, problems: list[Problem], default_deck: str) -> Card | None:
    """A card of a declared note type: its fields, tags, subdeck and identity (note type checks: notetypes/fields.py)."""
    from deckbuild.notetypes.fields import parse_fields

    before = len(problems)
    for key in item:
        if key in CARD_KEYS and key not in DECLARED_KEYS:
            problems.append(
                Problem(
                    item.key_locs[key],
                    "E214",
                    f"card '{card_id}': '{key}' is for the built-in kinds; a card of a declared note type has "
                    f"{', '.join(DECLARED_KEYS)} (put its text in 'fields')",
                )
            )
    notetype = item["notetype"]
    if not isinstance(notetype, str) or not notetype.strip():
        problems.append(Problem(item.value_locs["notetype"], "E211", f"card '{card_id}': 'notetype': expected a note type's key"))
    note_fields, field_locations = parse_fields(item, card_id, problems)
    if "fields" not in item:
        problems.append(Problem(loc, "E105", f"card '{card_id}': missing required key 'fields' (field name -> text)"))
    tags = _tags(item, card_id, problems)
    previous_ids = _word_list(item, "previous_ids", problems)
    for old in previous_ids:
        if not CARD_ID_PATTERN.fullmatch(old):
            problems.append(
                Problem(item.value_locs["previous_ids"], "E109", f"card '{card_id}': previous id {old!r}: expected an id")
            )
    deck, guid = _deck_and_guid(item, card_id, previous_ids, default_deck, problems)
    if "origin" in item and not isinstance(item["origin"], dict):
        problems.append(Problem(item.value_locs["origin"], "E106", "'origin': expected a mapping"))
    silences, silence_locations = parse_silences(item, card_id, problems) if "lint" in item else ((), {})
    if len(problems) > before:
        return None
    return Card(
        id=card_id,
        kind="note",
        location=loc,
        tags=tags,
        previous_ids=previous_ids,
        notetype=str(notetype).strip(),
        note_fields=note_fields,
        deck=deck,
        guid=guid,
        lint=silences,
        key_locations={**item.value_locs, **field_locations, **silence_locations},
    )


def fields_difficulty(item: LocatedMap, card_id: str, kind: CardKind, problems: list[Problem]) -> str:
    if "difficulty" not in item:
        if kind == "qa":
            problems.append(
                Problem(item.loc, "E105", f"card '{card_id}': missing required key 'difficulty' ({' | '.join(DIFFICULTIES)})")
            )
        return ""
    value = item["difficulty"]
    if value not in DIFFICULTIES:
        problems.append(
            Problem(
                item.value_locs["difficulty"],
                "E107",
                f"card '{card_id}': difficulty: expected one of {', '.join(DIFFICULTIES)}; got {value!r}",
            )
        )
        return ""
    return str(value)


def _figure(item: LocatedMap, card_id: str, problems: list[Problem]) -> Figure | None:
    if "diagram" in item and "image" in item:
        problems.append(Problem(item.key_locs["image"], "E120", f"card '{card_id}': give either 'diagram' or 'image', not both"))
        return None
    for key, required in (("diagram", ("name", "alt")), ("image", ("file", "alt"))):
        if key not in item:
            continue
        spec = item[key]
        where = item.value_locs[key]
        if not isinstance(spec, LocatedMap):
            problems.append(Problem(where, "E106", f"'{key}': expected a mapping with {', '.join(required)}; got {_kind(spec)}"))
            return None
        allowed = (*required, "params") if key == "diagram" else required
        for sub in spec:
            if sub not in allowed:
                problems.append(
                    Problem(spec.key_locs[sub], "E104", f"'{key}': unknown key '{sub}'; expected one of {', '.join(allowed)}")
                )
        for sub in required:
            if not isinstance(spec.get(sub), str) or not spec[sub].strip():
                problems.append(Problem(spec.value_locs.get(sub, where), "E105", f"'{key}': '{sub}' is required (text)"))
        params = spec.get("params", {})
        if not isinstance(params, dict):
            problems.append(
                Problem(spec.value_locs["params"], "E106", f"'{key}.params': expected a mapping; got {_kind(params)}")
            )
            return None
        if any(p.location == where for p in problems):
            return None
        return Figure(
            alt=str(spec.get("alt", "")).strip(),
            diagram=spec.get("name") if key == "diagram" else None,
            params=tuple(sorted((str(k), _plain(v)) for k, v in params.items())),
            file=spec.get("file") if key == "image" else None,
            location=where,
        )
    return None


def _plain(value: Any) -> Any:
    """Located containers -> hashable plain values (tuples), for frozen dataclasses."""
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _plain(v)) for k, v in value.items()))
    return value
