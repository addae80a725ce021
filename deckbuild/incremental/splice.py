"""An edited card file parsed again only where it changed.

A card file in list form is a header (comments, a '---') and its cards, each starting on a line of its
own that begins with '- ' (a *segment*: from that line to the next card's).  What the cache
keeps of the last parse of a file is its cards and, per segment, its length and a hash of its
text.  When the file changes, the segments still equal at its start and at its end are its
cards unchanged; the text between them (the *chunk*) is parsed alone, at its own lines, and
the cards after it move by as many lines as the chunk gained or lost.

This gives what parsing the whole file gives, because nothing in a YAML block sequence carries
across a line that begins with '- ' at the top level: everything open before it is closed by
it, whatever follows.  The chunk is taken only when that holds on both of its sides -- it
starts with such a line, the unchanged cards after it start with one, and it holds no
document marker, directive or byte order mark that would change the document around it (nor
does any kept card: a document end after the last one ends the file), nor
a line break other than "\n" (lines are counted by them) -- and only when it parses without
a single problem (an unclosed quote or bracket is an error
alone, where the whole file might read on into the next card).  Anything else, and a file
whose last parse had a problem or is in the mapping form, is parsed whole.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from deckbuild.errors import Location, Problem
from deckbuild.incremental.codec import KeyLocations, card_digest, encode_parsed, moved_key_locations
from deckbuild.model import Card, Figure
from deckbuild.validate import CardFacts, card_facts
from deckbuild.yamlload import decode_text

if TYPE_CHECKING:
    from deckbuild.incremental.cache import BuildCache

Spans = list[tuple[int, str]]
"""Per segment (the header, then each card): its length in characters and text_hash of it."""
LoadText = Callable[[str, str], tuple[list[Card], list[Problem]]]
"""sources.load_text: a card file's text -> its cards and problems (handed in from above)."""

_HEADER_LINE = re.compile(r"(---)?[ \t]*(#[^\n]*)?\n?")  # a blank or comment line, or the document's start
_OUTSIDE_A_CARD = re.compile(r"^(---|\.\.\.|%)|\ufeff", re.MULTILINE)  # document markers, directives, a BOM
# Line breaks YAML counts that are not a "\n" (lines are counted here by their "\n"s).
_OTHER_BREAKS = re.compile("\r(?!\n)|[\x85\u2028\u2029]")


class Old(NamedTuple):
    """The last parse of a file: its spans, cards, and their facts if kept (else None)."""

    spans: Spans
    cards: Sequence[Card]
    facts: Sequence[CardFacts] | None


class Spliced(NamedTuple):
    """The file's cards and facts: `kept` cards from the old parse, then `fresh` ones parsed
    again, then the old parse's last `moved` cards (moved to their new lines)."""

    cards: list[Card]
    facts: list[CardFacts]
    kept: int
    fresh: int
    moved: int


def text_hash(text: str) -> str:
    """A segment's hash: 16 bytes of BLAKE2b, so that no two texts pass for one another."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def spans(text: str, cards: Sequence[Card], problems: Sequence[Problem]) -> Spans | None:
    """The file's segments, or None when it cannot be cut into them: a problem, no card, the
    mapping form, or a card whose mapping does not start on its own '- ' line."""
    if problems or not cards or _OTHER_BREAKS.search(text):
        return None
    starts: list[int] = []
    position, line = 0, 1  # the start of line `line`
    for card in cards:  # in file order: one walk down the lines that start with '- '
        if card.location.col != 3:
            return None
        while line < card.location.line:
            found = text.find("\n- ", position)
            if found < 0:
                return None
            line += text.count("\n", position, found + 1)
            position = found + 1
        if line != card.location.line or (starts and starts[-1] == position) or not text.startswith("- ", position):
            return None
        starts.append(position)
    if not _only_comments(text[: starts[0]]):
        return None  # the mapping form ("cards:" above them), or something else around the list
    if _OUTSIDE_A_CARD.search(text, starts[0]):
        return None  # a document end after the last card ("..."), say: a card added below it is no card
    bounds = [0, *starts, len(text)]
    return [(end - start, text_hash(text[start:end])) for start, end in zip(bounds, bounds[1:], strict=False)]


def file_spans(raw: bytes | None, display: str, cards: Sequence[Card], problems: Sequence[Problem]) -> Spans | None:
    """spans() of a card file from its bytes, as its parse read them (None: not read from bytes)."""
    text = decode_text(raw, display)[0] if raw is not None and not problems else None
    return spans(text, cards, problems) if text is not None else None


def _only_comments(header: str) -> bool:
    position = 0
    while position < len(header):
        match = _HEADER_LINE.match(header, position)
        if match is None or match.end() == position:
            return False
        position = match.end()
    return True


def splice(text: str, display: str, old: Old, load_text: LoadText) -> Spliced | None:
    """The file's cards (and facts) as a parse of the whole `text` gives them, taking the
    unchanged segments' from `old`; None when only a whole parse can tell."""
    segments = old.spans
    if len(segments) != len(old.cards) + 1:
        return None
    # The segments unchanged at the start (the header first) and at the end.
    start, head = 0, 0
    for length, digest in segments:
        if text_hash(text[start : start + length]) != digest:
            break
        start += length
        head += 1
    if head == 0:
        return None  # the header changed
    end, tail = len(text), len(segments)
    while tail > head:
        length, digest = segments[tail - 1]
        if end - length < start or text_hash(text[end - length : end]) != digest:
            break
        end -= length
        tail -= 1
    chunk = text[start:end]
    if not _line_start(text, start) or not _line_start(text, end) or _OUTSIDE_A_CARD.search(chunk) or _OTHER_BREAKS.search(chunk):
        return None  # the chunk or the cards after it would not start a line of their own
    if chunk and not chunk.startswith("- "):
        return None
    first_line = text.count("\n", 0, start) + 1
    fresh: list[Card] = []
    if chunk:
        # Parsed at its own lines: the lines above it given as blank lines.
        fresh, problems = load_text("\n" * (first_line - 1) + chunk, display)
        if problems:
            return None
    kept, moved = old.cards[: head - 1], old.cards[tail - 1 :]
    shift = (first_line + chunk.count("\n") - moved[0].location.line) if moved else 0
    fresh_facts = [card_facts(card) for card in fresh]  # while their locations are still objects
    for card in fresh:
        object.__setattr__(card, "key_locations", KeyLocations.compact(card.key_locations))
    moved_cards = [_moved_card(card, shift) for card in moved]
    cards = [*kept, *fresh, *moved_cards]
    if old.facts is None:
        facts = [*map(card_facts, kept), *fresh_facts, *map(card_facts, moved_cards)]
    else:
        facts = [*old.facts[: head - 1], *fresh_facts, *(_moved_facts(facts, shift) for facts in old.facts[tail - 1 :])]
    return Spliced(cards, facts, len(kept), len(fresh), len(moved))


class Reparsed(NamedTuple):
    """What a build keeps of a card file's parse (see parallel.parse_here): it had no problem."""

    cards: list[Card]
    digests: list[bytes]
    encoded: str | None
    facts: list[CardFacts]
    spans: Spans | None


def reparse(cache: BuildCache, display: str, raw: bytes, key: bytes, load_text: LoadText) -> Reparsed | None:
    """The parse of the card file `display` (its bytes `raw`, their cache key `key`), spliced
    from the file's last parse without problems that the cache keeps; None when it keeps none
    or it cannot be used."""
    # The path names the key of its last clean parse; the segments are kept under that key,
    # as the parse is, so a parse and its segments always belong together.
    pointer = cache.file_entries([display.encode()], "splices").get(display.encode())
    if pointer is None:
        return None
    try:
        old_key = bytes.fromhex(pointer)
        found = cache.file_entries([old_key], "splices").get(old_key) if old_key != key else None
        if found is None:
            return None
        old_spans = [(int(length), str(digest)) for length, digest in json.loads(found)]
    except (ValueError, TypeError):
        return None
    parsed = cache.parsed(old_key)
    text, problems = decode_text(raw, display)
    if parsed is None or parsed[1] or text is None or problems:
        return None
    old_cards = parsed[0]
    if any(card.location.path != display for card in old_cards):
        return None  # another file's parse (a row that is not ours): never spliced into this one
    result = splice(text, display, Old(old_spans, old_cards, cache.kept_facts(old_key, len(old_cards))), load_text)
    if result is None:
        return None
    old_digests = [cache.digest(card) for card in old_cards]
    digests = [
        *old_digests[: result.kept],
        *(card_digest(card) for card in result.cards[result.kept : result.kept + result.fresh]),
        *old_digests[len(old_cards) - result.moved :],
    ]
    try:
        encoded: str | None = encode_parsed(result.cards, [], digests)
    except (TypeError, ValueError):
        encoded = None
    return Reparsed(result.cards, digests, encoded, result.facts, spans(text, result.cards, []))


def remember(cache: BuildCache, display: str, key: bytes, file_spans: Spans) -> None:
    """Keep `file_spans` as the segments of the parse stored under `key`, the last clean parse
    of the file at `display`."""
    cache.store_file_entries({display.encode(): key.hex(), key: json.dumps(file_spans)}, "splices")


def _line_start(text: str, offset: int) -> bool:
    return offset in (0, len(text)) or text[offset - 1] == "\n"


def _moved(where: Location, shift: int) -> Location:
    return Location(where.path, where.line + shift, where.col) if where.line > 0 else where


def _moved_card(card: Card, shift: int) -> Card:
    """The card `shift` lines further down (made as codec.decode_card makes one: no __init__)."""
    if not shift:
        return card
    values = dict(card.__dict__)
    values["location"] = _moved(card.location, shift)
    values["key_locations"] = moved_key_locations(card.key_locations, shift)
    figure: Figure | None = card.figure
    if figure is not None and figure.location is not None:
        moved_figure: Figure = object.__new__(Figure)
        moved_figure.__dict__.update(figure.__dict__, location=_moved(figure.location, shift))
        values["figure"] = moved_figure
    moved: Card = object.__new__(Card)
    moved.__dict__.update(values)
    return moved


def _moved_facts(facts: CardFacts, shift: int) -> CardFacts:
    if not shift or not facts.problems and not facts.claims:
        return facts
    return CardFacts(
        tuple(Problem(_moved(p.location, shift), p.code, p.message, p.severity, p.subject) for p in facts.problems),
        tuple((answer, _moved(where, shift), number, body) for answer, where, number, body in facts.claims),
    )
