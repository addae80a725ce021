"""Every check that needs the whole deck.  Collects all problems; never stops at the first."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import attrgetter
from typing import Protocol

from deckbuild.errors import Location, Problem, TextProblem
from deckbuild.lint.codes import Finding
from deckbuild.model import Card
from deckbuild.render import markdown_images

MATH_KEYS = ("question", "answer", "details", "context")


class FactStore(Protocol):
    """Where the facts of unchanged card files are kept between builds (incremental/cache.py)."""

    def run_facts(self, path: str, cards: Sequence[Card], compute: Callable[[Card], CardFacts]) -> list[CardFacts]:
        """The facts of the cards of one card file (`compute` for those it does not keep)."""
        ...


@dataclass(frozen=True)
class CardFacts:
    """What the deck-wide checks need of one card: the problems it has on its own (E121,
    E413, E415, E416, the learning lint's E420-E427) and, for a cloze of a question, each deletion's answer (E414).

    A pure function of the card and its place in its file, so a card file whose bytes did
    not change keeps its facts (FactStore) and a rebuild checks only the edited files' cards.
    """

    problems: tuple[Problem, ...]
    claims: tuple[tuple[tuple[str, ...], Location, int, str], ...] = ()  # (answer tokens, where, cN, body)


def validate_cards(
    cards: Sequence[Card],
    store: FactStore | None = None,
    invalid: Collection[str] = (),
    *,
    facts: Sequence[CardFacts] | None = None,
    own: bool = True,
) -> list[Problem]:
    """Duplicate ids, dangling references, text, cloze and diagram rules for every card.

    `invalid`: ids of cards left out for their own errors; a reference to one is not dangling.
    `facts`: deck_facts(cards, store), if read already.  `own=False`: without the problems each
    card has on its own (own_problems(facts) lists them), which are then not copied.
    """
    problems: list[Problem] = []
    first_seen: dict[str, Card] = {}
    for card in cards:
        other = first_seen.setdefault(card.id, card)
        if other is not card:
            problems.append(
                Problem(
                    card.where("id"),
                    "E108",
                    f"duplicate card id '{card.id}': also at {other.where('id')}; ids must be unique in the deck",
                )
            )
    for card in cards:
        if card.related or card.duplicate_of or card.of or card.kind in ("formula", "fact"):
            problems.extend(_check_references(card, first_seen, invalid))
    problems += claim_problems(cards, deck_facts(cards, store) if facts is None else facts, {}, own=own)
    return problems


def claim_problems(
    cards: Sequence[Card], facts: Sequence[CardFacts], deleted_by: dict[tuple[str, tuple[str, ...]], str], *, own: bool = False
) -> list[Problem]:
    """E414: two clozes of one question deleting the same answer, card by card (with each card's
    own problems first if `own`).  `deleted_by`: (question, answer) -> the first card deleting it,
    filled as the cards are read."""
    problems: list[Problem] = []
    for card, found in zip(cards, facts, strict=True):
        if own:
            problems.extend(found.problems)
        for answer, where, number, body in found.claims:
            claimed = deleted_by.setdefault((card.of, answer), card.id)
            if claimed != card.id:
                problems.append(
                    Problem(
                        where,
                        "E414",
                        f"card '{card.id}': c{number} deletes {body.strip()!r}, as card '{claimed}' "
                        f"(also of '{card.of}') does; merge the two notes or delete different text",
                        "warning",
                    )
                )
    return problems


def own_problems(facts: Sequence[CardFacts]) -> list[Problem]:
    """The problems the cards of these facts have on their own, in card order."""
    return [problem for found in facts for problem in found.problems]


def deck_facts(cards: Sequence[Card], store: FactStore | None) -> list[CardFacts]:
    """Every card's facts, file by file: kept ones where the store has them, else computed (and kept)."""
    out: list[CardFacts] = []
    for path, grouped in groupby(cards, key=_PATH):  # a file's cards are consecutive (sources.load_cards)
        run = list(grouped)
        out.extend(store.run_facts(path, run, card_facts) if store is not None else [card_facts(card) for card in run])
    return out


_PATH = attrgetter("location.path")


def card_facts(card: Card) -> CardFacts:
    """One card's own problems and E414 claims (see CardFacts)."""
    problems = _check_text(card) + _cloze_rules(card) + lint_problems(card)
    claims = []
    if card.of and card.kind in ("formula", "fact"):
        from deckbuild.cloze.scan import parse_deletions

        text = getattr(card, card.kind)
        for deletion in parse_deletions(text).deletions:
            answer = _tokens(deletion.body)
            if answer:
                claims.append(
                    (tuple(answer), offset_location(card.where(card.kind), text, deletion.start), deletion.number, deletion.body)
                )
    return CardFacts(tuple(problems), tuple(claims))


# --- the learning lint (deckbuild/lint/), placed in the card's file --------------


def lint_problems(card: Card) -> list[Problem]:
    """The card's learning-lint warnings its `lint:` key does not silence, and its silences
    of codes that did not fire (E427)."""
    from deckbuild.lint.codes import E_SILENCE_UNUSED
    from deckbuild.lint.run import lint_card
    from deckbuild.lint.silences import silence_key

    linted = lint_card(card)
    problems = [_lint_problem(card, finding) for finding in linted.warnings]
    for code in linted.unused:
        problems.append(
            Problem(
                card.where(silence_key(code)),
                E_SILENCE_UNUSED,
                f"card '{card.id}': 'lint' silences {code}, which does not fire on this card: remove the silence",
                "warning",
            )
        )
    return problems


def silenced_problems(card: Card) -> list[tuple[Problem, str]]:
    """The warnings the card's `lint:` key silences, each located, with the reason given."""
    from deckbuild.lint.run import lint_card

    return [(_lint_problem(card, finding), reason) for finding, reason in lint_card(card).silenced] if card.lint else []


def _lint_problem(card: Card, finding: Finding) -> Problem:
    from deckbuild.lint.front import value_of

    value_at = card.where(finding.key)  # a finding about the whole value is at the value itself
    where = offset_location(value_at, value_of(card, finding.key), finding.offset) if finding.offset else value_at
    return Problem(where, finding.code, f"card '{card.id}': {finding.message}", "warning")


# --- clozes that test one thing ----------------------------------------------

INTERNAL_CODE = re.compile(r"\(\s*[A-Z]{1,2}\d{2}\s*\)")  # (F01), (N60): bookkeeping codes; (A100) is a GPU
"""A bookkeeping code like "(F01)" left in learner-facing text."""

_TEXT_KEYS = ("question", "answer", "details", "context", "formula", "fact")


def _tokens(text: str) -> list[str]:
    """Words and symbols of a deletion or hint, ignoring case, spacing, braces and text macros."""
    text = re.sub(r"\\(text|textbf|textit|mathrm|mathbf|operatorname)\b", " ", text)
    return re.findall(r"\\[A-Za-z]+|\w+|[^\w\s{}]", text.lower())


def _contains(hint: list[str], answer: list[str]) -> bool:
    n = len(answer)
    return n > 0 and any(hint[i : i + n] == answer for i in range(len(hint) - n + 1))


def _cloze_rules(card: Card) -> list[Problem]:
    """E413 a hint that is or contains its answer; E415 (warning) an internal code such as
    (F01) in a field; E416 (warning) a fact without a context line.  (E414, two cloze notes
    of one question deleting the same text, needs the deck: validate_cards.)"""
    from deckbuild.cloze.scan import parse_deletions

    problems: list[Problem] = []
    for key in _TEXT_KEYS:
        text = getattr(card, key)
        match = INTERNAL_CODE.search(text) if text else None
        if match:
            problems.append(
                Problem(
                    offset_location(card.where(key), text, match.start()),
                    "E415",
                    f"card '{card.id}': {key}: internal code {match.group(0).strip()!r} in what the learner reads; "
                    "remove it (keep bookkeeping in YAML comments or tags)",
                    "warning",
                )
            )
    if card.kind not in ("formula", "fact"):
        return problems
    key = card.kind
    text = getattr(card, key)
    if card.kind == "fact" and not card.context.strip():
        problems.append(
            Problem(
                card.location,
                "E416",
                f"card '{card.id}': a fact without 'context': expected a line saying what the fact is about",
                "warning",
            )
        )
    for deletion in parse_deletions(text).deletions:
        if deletion.hint is not None and _contains(_tokens(deletion.hint), _tokens(deletion.body)):
            problems.append(
                Problem(
                    offset_location(card.where(key), text, deletion.start),
                    "E413",
                    f"card '{card.id}': c{deletion.number}: the hint {deletion.hint.strip()!r} gives away its answer "
                    f"{deletion.body.strip()!r}; expected a hint that does not contain it",
                )
            )
    return problems


def _check_references(card: Card, by_id: dict[str, Card], invalid: Collection[str] = ()) -> list[Problem]:
    problems = []
    for key, targets in _references(card):
        for target in targets:
            if target == card.id:
                problems.append(_names_itself(card, key))
            elif target not in by_id:
                if target in invalid:  # the card exists; its own errors are reported
                    continue
                problems.append(Problem(card.where(key), "E110", f"card '{card.id}': '{key}': no card with id '{target}'"))
            elif key == "of" and by_id[target].kind != "qa":
                problems.append(
                    Problem(
                        card.where(key),
                        "E110",
                        f"card '{card.id}': 'of' must name a question card; '{target}' is a {by_id[target].kind} card",
                    )
                )
    return problems + _origin_problems(card)


def reference_problems(card: Card) -> list[Problem]:
    """_check_references' problems for a deck in which every card named exists and every `of`
    names a question card: those the card has on its own (it names itself; E105)."""
    problems = []
    for key, targets in _references(card):
        for target in targets:
            if target == card.id:
                problems.append(_names_itself(card, key))
    return problems + _origin_problems(card)


def _references(card: Card) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each key of the card that names other cards, and the ids it names."""
    return (
        ("related", card.related),
        ("duplicate_of", (card.duplicate_of,) if card.duplicate_of else ()),
        ("of", (card.of,) if card.of else ()),
    )


def _names_itself(card: Card, key: str) -> Problem:
    return Problem(card.where(key), "E110", f"card '{card.id}': '{key}' names the card itself")


def _origin_problems(card: Card) -> list[Problem]:
    """E105: a cloze that neither names its question nor gives what it would inherit from one."""
    problems = []
    if card.kind in ("formula", "fact"):
        if not card.of and not card.difficulty:
            problems.append(
                Problem(card.location, "E105", f"card '{card.id}': give 'of' (the question it comes from) or 'difficulty'")
            )
        if not card.of and not card.topics:
            problems.append(
                Problem(card.location, "E105", f"card '{card.id}': give 'of' (the question it comes from) or 'topics'")
            )
    return problems


def _check_text(card: Card) -> list[Problem]:
    problems = []
    for key in ("question", "answer", "details", "context", "fact"):
        text = getattr(card, key)
        if not text:
            continue
        if markdown_images(text):
            problems.append(
                Problem(
                    card.where(key),
                    "E121",
                    f"card '{card.id}': '{key}' has a Markdown image; use the card's 'image:' key (file, alt) instead",
                )
            )
    return problems


def validate_math_and_cloze(cards: Sequence[Card]) -> list[Problem]:
    """LaTeX and cloze rules (cloze/checks.py) for formulas, facts, and math in any Markdown text."""
    from deckbuild.cloze.checks import math_problems, validate_fact, validate_formula

    problems: list[Problem] = []
    for card in cards:
        checks: list[tuple[str, Callable[[str], list[TextProblem]]]] = [
            (key, math_problems) for key in MATH_KEYS if getattr(card, key)
        ]
        if card.kind == "formula":
            checks.append(("formula", validate_formula))
        elif card.kind == "fact":
            checks.append(("fact", validate_fact))
        for key, checker in checks:
            text = getattr(card, key)
            if key in MATH_KEYS and "\\" not in text and "$" not in text:
                continue  # no math possible: skip the scan
            for found in checker(text):
                where = offset_location(card.where(key), text, found.offset)
                problems.append(found.at(where, f"card '{card.id}': {key}: "))
    return problems


def offset_location(value_at: Location, text: str, offset: int) -> Location:
    """file:line:col of a character inside a YAML text value (best effort for columns).

    Multi-line values are block scalars in practice ('|'), whose text starts on the line
    after the indicator, indented by two more columns than the key.
    """
    before = text[: max(offset, 0)]
    newlines = before.count("\n")
    if "\n" not in text.rstrip("\n"):
        return Location(value_at.path, value_at.line, value_at.col + len(before) + (1 if value_at.col else 0))
    column = len(before) - (before.rfind("\n") + 1) if newlines else len(before)
    return Location(value_at.path, value_at.line + 1 + newlines, column + 1)
