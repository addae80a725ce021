"""How the build cache stores its values: cards, problems and facts as JSON, a note as a row,
and the digest that keys a card's note.

JSON, never pickle, so a cache folder copied from elsewhere can only ever hold data.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import operator
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from deckbuild.errors import Location, Problem
from deckbuild.model import Card, Figure, RenderedNote

if TYPE_CHECKING:
    from deckbuild.validate import CardFacts


# A cached note: every RenderedNote field but its position (text, tuples of text), a column each.
NOTE_FIELDS = tuple(f.name for f in dataclasses.fields(RenderedNote) if f.name != "due")


def encode_parsed(cards: list[Card], problems: list[Problem], digests: list[bytes]) -> str:
    """A card file's parse as the cache stores it (raises TypeError for a value JSON cannot hold)."""
    return json.dumps(
        {
            "cards": [encode_card(c) for c in cards],
            "problems": [encode_problem(p) for p in problems],
            "digests": [d.hex() for d in digests],
        }
    )


# -- JSON for the parsed cards (explicit, so a cache file can only ever hold data)


def _loc(loc: Location) -> list[Any]:
    return [loc.path, loc.line, loc.col]


def _unloc(data: list[Any]) -> Location:
    return Location(str(data[0]), int(data[1]), int(data[2]))


def encode_problem(problem: Problem) -> list[Any]:
    encoded = [_loc(problem.location), problem.code, problem.message, problem.severity]
    return [*encoded, problem.subject] if problem.subject else encoded


def decode_problem(data: list[Any]) -> Problem:
    return Problem(_unloc(data[0]), data[1], data[2], data[3], str(data[4]) if len(data) > 4 else "")


def encode_facts(facts: CardFacts) -> Any:
    if not facts.problems and not facts.claims:
        return 0
    claims = [[list(answer), _loc(where), number, body] for answer, where, number, body in facts.claims]
    return [[encode_problem(p) for p in facts.problems], claims]


def decode_facts(data: Any, none: CardFacts) -> CardFacts:
    """A card's facts from their JSON; `none`: the one shared value of a card without any."""
    if data == 0:
        return none
    problems, claims = data
    return type(none)(
        tuple(decode_problem(p) for p in problems),
        tuple((tuple(answer), _unloc(where), int(number), str(body)) for answer, where, number, body in claims),
    )


def _tuples(value: Any) -> Any:
    """JSON lists back to the tuples the frozen model holds."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _location(value: list[Any]) -> Location:
    location: Location = object.__new__(Location)
    location.__dict__.update(path=value[0], line=value[1], col=value[2])  # as decode_card does: no __init__
    return location


def _figure_json(figure: Figure | None) -> Any:
    if figure is None:
        return None
    location = _loc(figure.location) if figure.location else None
    return [figure.alt, figure.diagram, figure.params, figure.file, location]


def _figure(data: Any) -> Figure | None:
    if data is None:
        return None
    alt, diagram, params, file, location = data
    figure: Figure = object.__new__(Figure)
    figure.__dict__.update(
        alt=alt, diagram=diagram, params=_tuples(params), file=file, location=_location(location) if location else None
    )
    return figure


class KeyLocations(Mapping[str, Location]):
    """A card's key -> Location map, kept as JSON data (or its text) and decoded when first read.

    Only cards with a problem are ever asked where a key is, so most never decode theirs;
    decoding every one was a third of loading a large deck from the cache, and the decoded
    maps were a third of the memory a large first build's cards take.
    """

    def __init__(self, raw: dict[str, list[Any]] | str) -> None:
        self._raw = raw
        self._decoded: dict[str, Location] | None = None

    @classmethod
    def compact(cls, locations: Mapping[str, Location]) -> KeyLocations:
        return cls(key_locations_text(locations))

    def _map(self) -> dict[str, Location]:
        if self._decoded is None:
            raw = json.loads(self._raw) if isinstance(self._raw, str) else self._raw
            self._decoded = {k: _location(v) for k, v in raw.items()}
        return self._decoded

    def __reduce__(self) -> tuple[Any, ...]:
        return (KeyLocations, (self._raw,))  # never the decoded map

    def __getitem__(self, key: str) -> Location:
        return self._map()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())


def key_locations_text(locations: Mapping[str, Location]) -> str:
    """A card's key -> Location map as the cache keeps it: one JSON text inside the card's JSON.

    Kept as nested JSON, a card's dozen [path, line, col] lists were four fifths of decoding a
    card file's parse (every list built, though most are never read); as a text, decoding the
    parse makes one string of it, and KeyLocations decodes that only when a key is asked for.
    """
    if isinstance(locations, KeyLocations) and isinstance(locations._raw, str):
        return locations._raw  # as read: never decoded
    return _COMPACT({k: _loc(v) for k, v in locations.items()})


_COMPACT = json.JSONEncoder(separators=(",", ":")).encode  # made once: json.dumps with options builds an encoder per call


def moved_key_locations(locations: Mapping[str, Location], shift: int) -> KeyLocations:
    """The same keys' locations `shift` lines further down, kept as text (splice.py)."""
    raw: dict[str, list[Any]] = json.loads(key_locations_text(locations))
    for where in raw.values():
        if where[1] > 0:
            where[1] += shift
    return KeyLocations(_COMPACT(raw))


# Card fields as positional lists (a 100k-card deck decodes ~2x faster than dicts of names).
# Plain values (text, flags, tuples of words) need no conversion beyond list -> tuple.
_CARD_FIELDS = tuple(f.name for f in dataclasses.fields(Card))
_ENCODE: dict[str, Any] = {
    "location": _loc,
    "key_locations": key_locations_text,
    "figure": _figure_json,
}
_DECODE: dict[str, Any] = {
    "location": _location,
    "key_locations": lambda value: KeyLocations(value),
    "figure": _figure,
}


_PLAIN_TYPES = (str, int, bool, tuple, type(None))
_SPECIAL = tuple((index, _ENCODE[name]) for index, name in enumerate(_CARD_FIELDS) if name in _ENCODE)
_ALL_VALUES = operator.itemgetter(*_CARD_FIELDS)
_PLAIN_VALUES = operator.itemgetter(*(i for i, name in enumerate(_CARD_FIELDS) if name not in _ENCODE))


def encode_card(card: Card) -> list[Any]:
    out = list(_ALL_VALUES(vars(card)))
    # One pass over the types in C; the named check only when some value is not of a plain type.
    if not frozenset(map(type, _PLAIN_VALUES(out))).issubset(_PLAIN_TYPES):
        for name, value in zip(_CARD_FIELDS, out, strict=True):
            if name not in _ENCODE and not isinstance(value, _PLAIN_TYPES):
                raise TypeError(f"cannot cache Card.{name} of type {type(value).__name__}")
    for index, encode in _SPECIAL:
        out[index] = encode(out[index])
    return out


# Fields decoded by kind (each list is rebuilt with one call, not one per value): tuples of
# words, and anything else that is a tuple in the model (nested lists become nested tuples).
_FLAT_TUPLES = tuple(f.name for f in dataclasses.fields(Card) if f.type == "tuple[str, ...]")
_NESTED = tuple(
    f.name
    for f in dataclasses.fields(Card)
    if str(f.type).startswith("tuple[") and f.name not in _FLAT_TUPLES and f.name not in _DECODE
)


_INDEX = {name: index for index, name in enumerate(_CARD_FIELDS)}
_FLAT_AT = tuple(_INDEX[name] for name in _FLAT_TUPLES)
_NESTED_AT = tuple(_INDEX[name] for name in _NESTED)
_LOCATION_AT, _KEYS_AT, _FIGURE_AT = _INDEX["location"], _INDEX["key_locations"], _INDEX["figure"]


def decode_card(data: list[Any]) -> Card:
    """The card of encode_card's list, decoded in place (`data` is the caller's no more).

    Value by value in the list JSON gave, then one update of the new card's __dict__: a
    rebuild decodes every unchanged card of the deck here, and a dict of names built first
    and a call per value cost a third more (0.45 against 0.35 s for 100,000 cards).  The
    card is made as pickle and copy make one, without the generated __init__ (one
    object.__setattr__ per field): safe because the values came out of such an object and
    the model classes have no __post_init__.
    """
    if len(data) != len(_CARD_FIELDS):
        raise ValueError("cached card has other fields than this Card")
    for index in _FLAT_AT:
        value = data[index]
        data[index] = tuple(value) if value else ()
    for index in _NESTED_AT:
        value = data[index]
        data[index] = _tuples(value) if value else ()
    data[_LOCATION_AT] = _location(data[_LOCATION_AT])
    data[_KEYS_AT] = KeyLocations(data[_KEYS_AT])
    if data[_FIGURE_AT] is not None:
        data[_FIGURE_AT] = _figure(data[_FIGURE_AT])
    card: Card = object.__new__(Card)
    card.__dict__.update(zip(_CARD_FIELDS, data, strict=True))
    return card


# -- which notes can be reused


_CONTENT_FIELDS = tuple(name for name in _CARD_FIELDS if name not in ("location", "key_locations", "figure"))


def card_digest(card: Card) -> bytes:
    """A hash of everything a card says, not where it says it (an edit above it moves it).

    repr of str, int, bool, None and tuples of them is exact and the same in every process.
    """
    figure = card.figure
    shown = None if figure is None else (figure.alt, figure.diagram, figure.params, figure.file)
    content = (tuple(getattr(card, name) for name in _CONTENT_FIELDS), shown)
    return hashlib.blake2b(repr(content).encode(), digest_size=16).digest()


def shown_digest(card: Card) -> bytes:
    """What a note shows of another card: keep in step with notes.render_notes."""
    return repr((card.id, card.question, card.context, card.difficulty, card.topics, card.source)).encode()


NOTE_COLUMNS = ", ".join(f"notes.{name}" for name in NOTE_FIELDS)
# Its tuples (fields, tags, ...) are kept as one text each, every item after a \x1f (the
# separator Anki itself keeps fields apart with, so no field holds one): SQLite hands
# back plain text, and splitting it costs far less than decoding JSON.
_NOTE_TUPLES = frozenset(f.name for f in dataclasses.fields(RenderedNote) if str(f.type).startswith("tuple["))
_SEP = "\x1f"
# What note_row writes: text in every column, each tuple empty or starting with the separator.
WELL_FORMED_NOTE = " AND ".join(
    f"typeof(notes.{name}) = 'text'"
    + (f" AND (notes.{name} = '' OR substr(notes.{name}, 1, 1) = char(31))" if name in _NOTE_TUPLES else "")
    for name in NOTE_FIELDS
)


def note_row(key: bytes, note: RenderedNote) -> tuple[Any, ...] | None:
    """A note as a row of the notes table, or None if it cannot be kept (then it is rendered
    again).  Written out field by field, like note_values: a first build stores every note."""
    joined = []
    for items in (note.fields, note.tags, note.media, note.previous_ids):
        try:
            text = _SEP + _SEP.join(items) if items else ""
        except TypeError:  # not all text
            return None
        if text.count(_SEP) != len(items):  # an item holding the separator would not split back
            return None
        joined.append(text)
    fields, tags, media, previous_ids = joined
    row = (key, note.card_id, note.guid, note.notetype, fields, tags, note.content_hash, media, previous_ids, note.deck)
    return row if all(isinstance(value, str) for value in row[1:]) else None


def note_values(row: Sequence[Any]) -> dict[str, Any]:
    """A well-formed row of the notes table (key first) -> its note's values by field name.

    Written out field by field: a rebuild decodes every note of the deck here.
    """
    _key, card_id, guid, notetype, fields, tags, content_hash, media, previous_ids, deck = row
    return {
        "card_id": card_id,
        "guid": guid,
        "notetype": notetype,
        "fields": tuple(fields.split(_SEP)[1:]),
        "tags": tuple(tags.split(_SEP)[1:]),
        "content_hash": content_hash,
        "media": tuple(media.split(_SEP)[1:]) if media else (),
        "previous_ids": tuple(previous_ids.split(_SEP)[1:]) if previous_ids else (),
        "deck": deck,
    }


def note_from_row(row: Sequence[Any]) -> RenderedNote:
    """The note of a well-formed row of the notes table, at position -1: the decoded values
    become the note (object.__new__), not a copy of them through the dataclass's __init__."""
    values = note_values(row)
    values["due"] = -1
    note: RenderedNote = object.__new__(RenderedNote)
    object.__setattr__(note, "__dict__", values)
    return note


# -- what a card file's notes were rendered from (NoteReuse: a file's notes taken whole)


class FileEntry(NamedTuple):
    """A card file's notes' keys in the order of its cards, and what they were rendered from
    besides the file's own bytes (its cache key): the union of its cards' note key inputs."""

    namespace: str  # digest of the namespace and source titles
    figures: dict[str, tuple[str, bool]]  # its cards with a figure -> the figure's file name, illustrative
    overlapping: dict[str, tuple[str, ...]]  # its cards that others say they duplicate -> those others
    named: tuple[tuple[str, bytes], ...]  # each card id its notes show something of, and what (NoteReuse)
    keys: tuple[bytes, ...]


def encode_file_entry(entry: FileEntry) -> str:
    return json.dumps(
        {
            "namespace": entry.namespace,
            "figures": {card_id: [name, bool(ill)] for card_id, (name, ill) in entry.figures.items()},
            "overlapping": {card_id: list(others) for card_id, others in entry.overlapping.items()},
            "named": [[ref, shown.hex()] for ref, shown in entry.named],
            "keys": b"".join(entry.keys).hex(),
        },
        ensure_ascii=False,
    )


def decode_file_entry(text: str) -> FileEntry | None:
    """The entry of encode_file_entry's text, or None if it is not one."""
    try:
        data = json.loads(text)
        keys = bytes.fromhex(data["keys"])
        entry = FileEntry(
            str(data["namespace"]),
            {str(card_id): (str(name), bool(ill)) for card_id, (name, ill) in data["figures"].items()},
            {str(card_id): tuple(str(o) for o in others) for card_id, others in data["overlapping"].items()},
            tuple((str(ref), bytes.fromhex(shown)) for ref, shown in data["named"]),
            tuple(keys[i : i + 16] for i in range(0, len(keys), 16)),
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return entry if all(len(key) == 16 for key in entry.keys) else None
