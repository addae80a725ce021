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


def verdict_problems(rows: dict[str, list[str]], ids: set[str]) -> list[str]:
    """Ids whose row lacks a verdict (kept / changed: what), a reason or a source cell ("—": none needed)."""
    problems = []
    for card_id in sorted(ids):
        cells = rows.get(card_id)
        if cells is None or len(cells) != 3:
            problems.append(f"{card_id}: expected a row of verdict | reason | source, found {cells}")
            continue
        verdict, reason, source = cells
        if not verdict.startswith(("kept", "changed: ")) or not reason or not source:
            problems.append(f"{card_id}: {cells}")
    return problems


def test_verdict_problems_finds_each_kind() -> None:
    rows = {"a": ["kept", "answers", "—"], "b": ["gist", "why", "—"], "c": ["kept", "", "—"], "d": ["kept", "x"]}
    assert [p.split(":")[0] for p in verdict_problems(rows, {"a", "b", "c", "d", "e"})] == ["b", "c", "d", "e"]


def test_every_question_row_gives_a_verdict_a_reason_and_a_source(shipped_collection) -> None:
    """Issue 30: each question card's row says kept or changed (what), why, and the source."""
    text = CURATION.read_text(encoding="utf-8")
    section = text[: text.index(CLOZE_SECTION)]
    notes = notes_by_card_id(shipped_collection)
    question_ids = {i for i, n in notes.items() if "Question" in n and "retired" not in n.tags}
    assert len(question_ids) == 163
    rows = {m.group(1): [c.strip() for c in m.group(2).split(" | ")] for m in ROW.finditer(section)}
    assert verdict_problems(rows, question_ids) == []


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
