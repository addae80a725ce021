"""The learning lint's codes, its thresholds (numbers, documented in docs/errors.md), and what a check returns."""

from __future__ import annotations

from dataclasses import dataclass

GIST_MAX_WORDS = 75
"""E420 above this: at 360 px the card's 18 px text holds about 5.6 words a line (27 px), so
75 words fill about 14 lines, what a 360x740 screen has left below Anki's bars, a three-line
question and the rule."""

LIST_MIN_ITEMS = 4
"""E421/E422 from this many items on: a set the learner fails by forgetting one of them."""

LIST_ITEM_MAX_WORDS = 6
"""An inline enumeration's items are short; longer comma-separated parts are clauses, not items."""

WARNINGS: dict[str, str] = {
    "E420": "a gist longer than a phone screen's worth of words",
    "E421": "a gist that is a list of several items",
    "E422": "a deletion that hides a list of several items",
    "E423": "a deletion's answer is shown elsewhere on its own front",
    "E424": "a symbol the context names appears in the formula only inside the deletion",
    "E425": "two numbers on the front give the deletion's answer in one arithmetic step",
}
"""The lint's warnings: the codes a card's `lint:` key may silence."""

E_SILENCE_FORM = "E426"  # error: a `lint:` key that is not {CODE: reason}
E_SILENCE_UNUSED = "E427"  # warning: a silence of a code that does not fire on the card
E_SILENCE_CLASH = "E428"  # error: `lint:` on a card whose note type has a field of that name


@dataclass(frozen=True)
class Finding:
    """One warning at a character offset of one of the card's text values (`key`)."""

    code: str
    key: str
    offset: int
    message: str
