"""Stage 4's checks of the cards as loaded: ids, references, text rules, note types' fields,
GUIDs, identity against what shipped, variants, retirements.

A pure function of values the plan has in memory (and of project files it only reads), so a
rebuild of a large deck runs it in a forked child beside the rest of the plan (beside.py):
those checks walk every card of the deck, and the stages after them never need their result
before the plan is complete.  The checks that read the build cache (the cards' own facts,
the project's diagrams) or whose result a later stage uses (the images) stay in the plan.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from deckbuild.errors import Problem

if TYPE_CHECKING:
    from deckbuild.apkg.notetypes import NoteType
    from deckbuild.beside import Beside
    from deckbuild.incremental.cache import BuildCache
    from deckbuild.incremental.memo import Memo
    from deckbuild.model import Card, DeckConfig
    from deckbuild.release.identity import Known
    from deckbuild.release.record import Record
    from deckbuild.release.versioning import Snapshot
    from deckbuild.validate import CardFacts


Found = tuple[list[Problem], list[Problem], list[Problem]]

MIN_CARDS_BESIDE = 15_000
"""Fewer cards than this are checked in the plan's own process.  A forked child costs the
plan a little more than the fork: every page of memory the plan writes to while the child
lives is copied first.  Measured against checks in the plan (pairs of one-card edit builds):
no difference at 10,000 generated cards, 7% less time at 30,000, 9% at 100,000."""


@dataclass(frozen=True)
class Checked:
    """What the checks read besides the cards' facts: the cards, their project, and what
    earlier builds and releases left (`invalid`: ids of cards left out for their own errors)."""

    root: Path
    config: DeckConfig | None
    cards: Sequence[Card]
    declared: Mapping[str, NoteType]
    invalid: Collection[str]
    record: Record | None
    previous: Snapshot | None
    past: Known | None
    allow_identity_change: bool
    releasing: bool


def checked(deck: Checked, store: BuildCache, jobs: int | None) -> tuple[list[Problem], Found | None, Beside[Found] | None]:
    """The cards' own problems (validate.own_problems, from their facts in `store`), and the
    problems of deck_checks: found here, or by the child returned, forked if start_beside
    says so (`jobs` 0: never).  The facts are not kept once the problems are found: a first
    build's are one object per card, through its peak."""
    from deckbuild.validate import deck_facts, own_problems

    facts = deck_facts(deck.cards, store)
    checks = functools.partial(deck_checks, deck, facts, store.memo())
    child = start_beside(checks, len(deck.cards), store.cards_read, jobs) if jobs != 0 else None
    return own_problems(facts), checks() if child is None else None, child


def start_beside(checks: Callable[[], Found], cards: int, read: int, jobs: int | None) -> Beside[Found] | None:
    """`checks` running in a forked child (beside.py), if the deck has enough `cards`, most of
    them `read` back from the build cache, and a second core may be used (`jobs`: --jobs, None
    for every core); else None.

    A build that parsed its cards (a first build, or the first after an upgrade) still holds
    everything the parse made when the checks start, at the height of its memory: there the
    pages the child copies raised a 100,000-card first build's peak from 618 to 958 MB, for a
    gain of 2% of its time.  A rebuild's peak comes later, with the package, and stays as it was."""
    from deckbuild.jobs import default_jobs

    if cards < MIN_CARDS_BESIDE or 2 * read < cards or (jobs if jobs is not None else default_jobs()) < 2:
        return None
    from deckbuild.beside import start

    return start(checks)


def deck_checks(deck: Checked, facts: Sequence[CardFacts], memo: Memo | None = None) -> Found:
    """The problems these checks find, in three lists the plan reports in this order, with
    others between: the deck's (ids, references, clozes of one question; the cards' own
    problems follow, validate.own_problems), the note types' (declared cards, template
    media; then the images' and the diagrams'), and those of what shipped (GUIDs, identity,
    variants, retirement).  `facts`: validate.deck_facts of the cards.

    The cards' own problems are left to the plan, which has them (`facts`): at 100,000
    generated cards, 30,000 warnings, and handing them back from a child cost the plan 0.08 s
    of the 0.4 s the child saves.  `memo` (serve): the checks across the deck are put together
    from each card file's share, kept there (file_checks.py)."""
    from deckbuild import file_checks
    from deckbuild import variants as variant_stage
    from deckbuild.notetypes.fields import check_declared_cards, check_guids
    from deckbuild.notetypes.media import template_media_problems
    from deckbuild.release import identity
    from deckbuild.validate import validate_cards

    config, record, previous = deck.config, deck.record, deck.previous
    files = file_checks.shares(deck.cards, facts, config.namespace, memo) if memo is not None and config else None
    ids = file_checks.ids_once(files) if files is not None else None
    if files is None or ids is None:  # no shares, or an id given twice: every check as in a build
        files, found = None, None
    else:
        found = file_checks.deck_problems(files, ids)
    if found is None:  # or files that touch
        found = validate_cards(deck.cards, invalid=deck.invalid, facts=facts, own=False)
    notetypes = check_declared_cards(deck.root, deck.cards, deck.declared)
    notetypes += template_media_problems(deck.root, deck.declared.values())
    then: list[Problem] = []
    if config is not None:
        guids = file_checks.guid_problems(files) if files is not None else None
        then += check_guids(config.namespace, deck.cards) if guids is None else guids
        then += identity.check_identity(
            deck.root,
            config,
            deck.cards,
            allow_change=deck.allow_identity_change,
            releasing=deck.releasing,
            past=deck.past,
            files=files,
        )
        then += variant_stage.check_variants(config, deck.cards)
        if previous is not None:  # releases/retired.yaml: why each retired note left, what replaces it
            from deckbuild.release import retirement

            then += retirement.check(deck.root, deck.cards, previous)
        if record is not None:  # a variant's deck name against the one it was built with
            then += variant_stage.check_renamed(config, record.extra, deck.allow_identity_change)
    return found, notetypes, then
