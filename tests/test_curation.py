"""docs/curation.md has exactly one row per card id the built deck ships, and none for an id it does not."""

from __future__ import annotations

import re
from collections import Counter

from ankiutil import notes_by_card_id
from conftest import REPO

CURATION = REPO / "docs" / "curation.md"
CLOZE_SECTION = "## Formula and fact cloze notes"
ROW = re.compile(r"^\| ([a-z0-9][a-z0-9-]*) \|(.*)\|\s*$", re.MULTILINE)


def curation_rows(text: str) -> Counter[str]:
    """Card ids named in the first cell of a table row (header and rule rows never match)."""
    return Counter(m.group(1) for m in ROW.finditer(text))


def coverage(ids: set[str], text: str) -> tuple[list[str], list[str], list[str]]:
    """(ids without a row, rows for ids the deck does not ship, ids with more than one row)."""
    rows = curation_rows(text)
    return sorted(ids - rows.keys()), sorted(rows.keys() - ids), sorted(i for i, n in rows.items() if n > 1)


def test_coverage_finds_missing_stale_and_repeated_rows() -> None:
    text = "| card id | verdict |\n|---|---|\n| a-card | kept |\n| gone-card | kept |\n| a-card | changed: gist |\n"
    assert coverage({"a-card", "new-card"}, text) == (["new-card"], ["gone-card"], ["a-card"])


def test_every_shipped_card_id_has_one_row_and_no_row_is_stale(shipped_collection) -> None:
    ids = set(notes_by_card_id(shipped_collection))
    assert len(ids) > 200  # the whole deck, retired notes included
    missing, stale, repeated = coverage(ids, CURATION.read_text(encoding="utf-8"))
    assert missing == [], f"card ids without a row in docs/curation.md: {missing}"
    assert stale == [], f"rows in docs/curation.md for ids the deck no longer ships: {stale}"
    assert repeated == [], f"card ids with more than one row: {repeated}"


def test_every_cloze_row_gives_a_verdict_and_a_source(shipped_collection) -> None:
    text = CURATION.read_text(encoding="utf-8")
    section = text[text.index(CLOZE_SECTION) :]
    cloze_ids = {i for i in notes_by_card_id(shipped_collection) if i.startswith(("fact-", "formula-"))}
    rows = {m.group(1): [c.strip() for c in m.group(2).split(" | ")] for m in ROW.finditer(section)}
    assert cloze_ids <= rows.keys(), sorted(cloze_ids - rows.keys())
    for card_id in cloze_ids:
        verdict, reason, source = rows[card_id]
        assert verdict.startswith(("kept", "changed: ")), (card_id, verdict)
        assert reason and source, card_id
