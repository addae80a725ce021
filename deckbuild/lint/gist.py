"""E420-E422: a gist too long to recall at once, and a gist or deletion that is a set of items."""

from __future__ import annotations

import re
from collections.abc import Sequence

from deckbuild.lint.codes import GIST_MAX_WORDS, LIST_ITEM_MAX_WORDS, LIST_MIN_ITEMS, Finding
from deckbuild.lint.front import Front
from deckbuild.model import Card

_BULLET = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+\S", re.MULTILINE)
_NUMBERED = re.compile(r"(?:^|\s)\((?:\d+|[a-z]|[ivx]+)\)\s")
_MATH = re.compile(r"\\\(.*?\\\)|\\\[.*?\\\]", re.DOTALL)
_LAST_JOIN = re.compile(r"^and\s+|\sand\s", re.IGNORECASE)
_SPLIT_MARKS = re.compile(r"[()\[\]{},]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n|;")
_CLAUSE = re.compile(
    r"^(?:which|who|whose|that|where|when|while|because|since|so|but|yet|although|though|if|unless|as|"
    r"then|thus|hence|e\.g\.|i\.e\.|for example|not)\b",
    re.IGNORECASE,
)


def words(text: str) -> int:
    """Words as a reader counts them: math spans count as one word each."""
    return len(_MATH.sub(" x ", text).split())


def list_items(text: str) -> int:
    """How many items the text enumerates: Markdown list items, (1) (2) ... markers, or the
    longest inline run 'a, b, c and d' of short parts (commas outside brackets; a semicolon ends the run)."""
    bullets = len(_BULLET.findall(text))
    numbered = len(_NUMBERED.findall(text))
    inline = max((_inline_items(sentence) for sentence in _SENTENCE.split(_MATH.sub(" x ", text))), default=0)
    return max(bullets, numbered, inline)


def _inline_items(sentence: str) -> int:
    """Items of the longest run 'a, b, c and d' in one sentence: short parts (a lead-in before
    a colon dropped), the last of them joined by 'and' (with 'or' they are alternatives, not a set)."""
    parts = [part.strip() for part in _top_level_split(sentence)]
    if len(parts) < 3:
        return 0
    if ":" in parts[0]:
        parts[0] = parts[0].rsplit(":", 1)[1].strip()
    best = run = 0
    for part in parts:
        if part.lower().startswith("or "):  # 'a, b, or c': alternatives
            run = 0
            continue
        joined = _LAST_JOIN.search(part)
        if joined and run >= 2 and not _CLAUSE.match(part):
            head, tail = part[: joined.start()].strip(), part[joined.end() :].strip()
            if len(head.split()) <= LIST_ITEM_MAX_WORDS and tail:
                best = max(best, run + (2 if head else 1))
        count = len(part.split())
        run = run + 1 if 0 < count <= LIST_ITEM_MAX_WORDS and not _CLAUSE.match(part) else 0
    return best


def _top_level_split(text: str) -> list[str]:
    """Split at commas outside brackets."""
    parts, depth, start = [], 0, 0
    for mark in _SPLIT_MARKS.finditer(text):
        ch = mark.group(0)
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(depth - 1, 0)
        elif depth == 0:
            parts.append(text[start : mark.start()])
            start = mark.end()
    parts.append(text[start:])
    return parts


def gist_findings(card: Card, shown: Sequence[Front]) -> list[Finding]:
    """E420 and E421 on a question card's answer; E422 on the deletions of a fact or of a
    declared note type's field (text, not LaTeX)."""
    found: list[Finding] = []
    if card.kind == "qa":
        count = words(card.answer)
        if count > GIST_MAX_WORDS:
            found.append(
                Finding(
                    "E420",
                    "answer",
                    0,
                    f"the answer has {count} words, more than a phone screen's {GIST_MAX_WORDS}: keep the gist "
                    "to what is recalled, and move the rest to 'details'",
                )
            )
        items = list_items(card.answer)
        if items >= LIST_MIN_ITEMS:
            found.append(
                Finding(
                    "E421",
                    "answer",
                    0,
                    f"the answer lists {items} items ({LIST_MIN_ITEMS} or more): forgetting one fails the card; "
                    "split it into cards, or make it a fact with one deletion per item",
                )
            )
    elif card.kind in ("fact", "note"):
        for front in shown:
            if front.key == "formula":
                continue
            items = list_items(front.deletion.body)
            if items >= LIST_MIN_ITEMS:
                found.append(
                    Finding(
                        "E422",
                        front.key,
                        front.deletion.start,
                        f"c{front.deletion.number} hides {items} items ({LIST_MIN_ITEMS} or more) in one deletion: "
                        "give each item its own deletion number",
                    )
                )
    return found
