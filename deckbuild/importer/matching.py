"""Which existing card is which seed question, and which curation entry a new one gets."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckbuild.importer.curation import Curation, CurationEntry
from deckbuild.importer.seeds import SeedQuestion, normalize_ws

FUZZY_MATCH = 0.8
"""difflib ratio above which a reworded seed question is the same card."""


@dataclass
class Slot:
    """Where a card lives: its file and its dict (mutated in place)."""

    file: Path
    card: dict[str, Any]


def norm_key(text: str) -> str:
    return normalize_ws(text).casefold()


def match_questions(questions: list[SeedQuestion], candidates: list[Slot]) -> tuple[dict[int, Slot], list[Slot]]:
    """Seed question index -> existing card: exact origin text first, then fuzzy >= 0.8."""
    matched: dict[int, Slot] = {}
    free = list(candidates)
    by_text: dict[str, Slot] = {}
    for slot in free:
        by_text.setdefault(norm_key(str(slot.card["origin"].get("question", ""))), slot)
    for index, seed_q in enumerate(questions):
        hit = by_text.get(norm_key(seed_q.question))
        if hit is not None and hit in free:
            matched[index] = hit
            free.remove(hit)
    pairs: list[tuple[float, int, int]] = []
    for index, seed_q in enumerate(questions):
        if index in matched:
            continue
        for c_index, slot in enumerate(free):
            ratio = difflib.SequenceMatcher(
                None,
                norm_key(seed_q.question),
                norm_key(str(slot.card["origin"].get("question", ""))),
            ).ratio()
            if ratio >= FUZZY_MATCH:
                pairs.append((-ratio, index, c_index))
    taken: set[int] = set()
    for _, index, c_index in sorted(pairs):
        if index in matched or c_index in taken:
            continue
        matched[index] = free[c_index]
        taken.add(c_index)
    remaining = [slot for c_index, slot in enumerate(free) if c_index not in taken]
    return matched, remaining


def find_curation(seed_q: SeedQuestion, curation: Curation, used: set[str]) -> CurationEntry | None:
    """The curation entry for a new question: same text, else a close rewording."""
    key = norm_key(seed_q.question)
    unused = [e for e in curation.entries if e.id not in used]
    for entry in unused:
        if norm_key(entry.question) == key:
            return entry
    best: tuple[float, CurationEntry] | None = None
    for entry in unused:
        ratio = difflib.SequenceMatcher(None, key, norm_key(entry.question)).ratio()
        if ratio >= FUZZY_MATCH and (best is None or ratio > best[0]):
            best = (ratio, entry)
    return best[1] if best else None


def unique_id(base: str, taken: set[str]) -> str:
    """base, else base-2, base-3 ... (the rule that gave 004-q083 its '-2')."""
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    return candidate
