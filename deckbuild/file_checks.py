"""Serve's deck-wide checks, put together from each card file's share of them.

A save in serve checks the whole deck again, though it changed one file: at 100,000 cards
the checks across the deck (ids, references, two clozes of one question deleting one answer,
GUIDs, identity against what shipped) were four tenths of a save.  A card file's share of
them (incremental.memo.FileChecks: its ids, the ids it names, its GUIDs and cloze answers,
the problems among its own cards) is kept while its cards are the same objects, and the
deck's problems are put together from the shares by set operations, in C.

That holds while no two files touch: no id, GUID or cloze answer in two of them, every card
named exists, every `of` names a question -- every save of a valid deck.  Otherwise the
check in question runs as in a build (validate.validate_cards, notetypes.fields.check_guids),
so the problems are always exactly a build's (tests/test_file_checks.py).
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Sequence
from itertools import groupby

from deckbuild.errors import Problem
from deckbuild.incremental.memo import FileChecks, Memo
from deckbuild.model import Card
from deckbuild.notetypes.fields import card_guid, check_guids
from deckbuild.release.identity import notetype_of
from deckbuild.validate import CardFacts, claim_problems, reference_problems

_PATH = operator.attrgetter("location.path")


def shares(cards: Sequence[Card], facts: Sequence[CardFacts], namespace: str, memo: Memo) -> list[FileChecks]:
    """Each card file's share, in the order of `cards` (a file's cards are consecutive): the
    last plan's for a file with the very same card objects under the same namespace (their
    facts are a function of them: validate.CardFacts)."""
    last = memo.file_checks
    made: dict[str, FileChecks] = {}
    out: list[FileChecks] = []
    start = 0
    for path, group in groupby(cards, key=_PATH):
        run = tuple(group)
        end = start + len(run)
        was = last.get(path)
        if was is None or was.namespace != namespace or len(was.cards) != len(run) or not all(map(operator.is_, run, was.cards)):
            was = share(run, facts[start:end], namespace)
        made[path] = was
        out.append(was)
        start = end
    memo.file_checks = made
    return out


def share(cards: tuple[Card, ...], facts: Sequence[CardFacts], namespace: str) -> FileChecks:
    """One card file's share of the checks (its cards, in order, and their facts)."""
    claimed: dict[tuple[str, tuple[str, ...]], str] = {}
    claims = claim_problems(cards, facts, claimed)
    references = [
        problem
        for card in cards
        if card.related or card.duplicate_of or card.of or card.kind in ("formula", "fact")
        for problem in reference_problems(card)
    ]
    guids = [card_guid(namespace, card) for card in cards]
    return FileChecks(
        cards,
        namespace,
        frozenset(card.id for card in cards),
        named=frozenset(ref for card in cards for ref in (*card.related, card.duplicate_of, card.of) if ref and ref != card.id),
        of=frozenset(card.of for card in cards if card.of and card.of != card.id),
        not_qa=frozenset(card.id for card in cards if card.kind != "qa"),
        references=tuple(references),
        claimed=frozenset(claimed),
        claim_problems=tuple(claims),
        guids=frozenset(guids),
        guid_problems=tuple(check_guids(namespace, cards)),
        shipped={card.id: guid for card, guid in zip(cards, guids, strict=True) if not card.previous_ids},
        kinds={card.id: notetype_of(card) for card in cards if not card.previous_ids},
        renamed=tuple(card for card in cards if card.previous_ids),
    )


def ids_once(files: Sequence[FileChecks]) -> frozenset[str] | None:
    """Every card id of the deck, or None if one is given twice (E108: the checks then run as in a build)."""
    if any(len(file.ids) != len(file.cards) for file in files):
        return None
    ids = frozenset().union(*(file.ids for file in files))
    return ids if len(ids) == sum(len(file.ids) for file in files) else None


def deck_problems(files: Sequence[FileChecks], ids: Collection[str]) -> list[Problem] | None:
    """validate.validate_cards' problems (without the cards' own: own=False) of a deck whose ids
    are `ids`, each given once; None if its files touch (a card named that does not exist, an
    `of` naming a card that is no question, one cloze answer claimed in two files)."""
    not_qa = frozenset().union(*(file.not_qa for file in files))
    if not all(file.named.issubset(ids) and file.of.isdisjoint(not_qa) for file in files):
        return None
    if not _disjoint([file.claimed for file in files]):
        return None
    return [p for file in files for p in file.references] + [p for file in files for p in file.claim_problems]


def guid_problems(files: Sequence[FileChecks]) -> list[Problem] | None:
    """check_guids' problems (E222), or None if two files have a GUID in common."""
    if not _disjoint([file.guids for file in files]):
        return None
    return [p for file in files for p in file.guid_problems]


def _disjoint(sets: Sequence[frozenset[object]]) -> bool:
    return len(frozenset().union(*sets)) == sum(map(len, sets))
