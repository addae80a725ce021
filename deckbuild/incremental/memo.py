"""What one process keeps in memory of the build cache between plans (`deckbuild serve`).

A save in `serve` plans the whole deck again, and most of that plan's time at 10,000 cards
went to reading back from cache.sqlite what the previous plan of the same process had just
written: every unchanged card file's parsed cards (JSON), their check facts and every note
row.  A Memo keeps those values, under the same keys as the cache (each key holds
everything its value depends on), so a hit is what the cache would have returned.  The
file is still the store of record: BuildCache writes it as before, and marks what a memo
hit used, so the next fresh process finds the same entries.

After each plan the memo keeps only the entries that plan used: it holds one deck's worth.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deckbuild.errors import Problem
    from deckbuild.model import Card
    from deckbuild.validate import CardFacts


@dataclass
class Memo:
    """Cache values by cache key; BuildCache reads it before the file and fills it as it goes."""

    parsed: dict[bytes, tuple[tuple[Card, ...], tuple[Problem, ...], tuple[bytes, ...]]] = field(default_factory=dict)
    facts: dict[bytes, tuple[CardFacts, ...]] = field(default_factory=dict)
    notes: dict[bytes, dict[str, Any]] = field(default_factory=dict)  # a note's values but its `due`

    def retain(self, parsed: set[bytes], facts: set[bytes], notes: set[bytes]) -> None:
        """Forget what the last plan did not use (a file edited away, a note re-rendered)."""
        self.parsed = {k: v for k, v in self.parsed.items() if k in parsed}
        self.facts = {k: v for k, v in self.facts.items() if k in facts}
        self.notes = {k: v for k, v in self.notes.items() if k in notes}
