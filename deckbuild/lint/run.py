"""The learning lint over one card: every check, then the card's silences applied."""

from __future__ import annotations

from dataclasses import dataclass

from deckbuild.lint.arithmetic import one_step
from deckbuild.lint.codes import Finding
from deckbuild.lint.front import fronts
from deckbuild.lint.gist import gist_findings
from deckbuild.lint.giveaway import eliminated, shown_elsewhere
from deckbuild.model import Card


@dataclass(frozen=True)
class Linted:
    """What the lint found on a card: warnings to report, warnings its `lint:` key silenced
    (with the reason), and silenced codes that found nothing (E427)."""

    warnings: tuple[Finding, ...]
    silenced: tuple[tuple[Finding, str], ...]
    unused: tuple[str, ...]


def findings(card: Card) -> list[Finding]:
    """Every learning-lint warning on the card, before silences (a declared note type's card:
    those on its cloze fields' own text)."""
    shown = fronts(card)  # each deletion's front, read once for every check
    return gist_findings(card, shown) + shown_elsewhere(card, shown) + eliminated(card, shown) + one_step(card, shown)


def lint_card(card: Card) -> Linted:
    found = findings(card)
    reasons = dict(card.lint)
    fired = {finding.code for finding in found}
    return Linted(
        tuple(f for f in found if f.code not in reasons),
        tuple((f, reasons[f.code]) for f in found if f.code in reasons),
        tuple(code for code in reasons if code not in fired),
    )
