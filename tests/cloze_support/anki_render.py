"""Render Cloze notes with the real Anki backend (the ``anki`` wheel), without packaging.

The escaping rules in deckbuild.cloze are only as good as Anki's parser agrees with them,
so tests add the emitted field to the stock "Cloze" note type of a throwaway collection and
read back what Anki shows on each card's front and back.
"""

from __future__ import annotations

import atexit
import html
import re
import shutil
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from anki.collection import Collection


@dataclass(frozen=True)
class RenderedCard:
    """One card of a note: its cloze number and the visible front/back text."""

    ordinal: int
    front_html: str
    back_html: str

    @property
    def front(self) -> str:
        """Front as the learner sees it: tags (and their attributes) removed, unescaped."""
        return visible_text(self.front_html)

    @property
    def back(self) -> str:
        """Back as the learner sees it."""
        return visible_text(self.back_html)


@cache
def _collection() -> tuple[Collection, int]:
    """One collection per test session: creating one costs far more than adding a note."""
    folder = Path(tempfile.mkdtemp(prefix="deckbuild-cloze-"))
    col = Collection(str(folder / "test.anki2"))
    deck_id = col.decks.id("cloze-tests")
    assert deck_id is not None

    def close() -> None:
        col.close()
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(close)
    return col, deck_id


def render_cloze(text: str) -> list[RenderedCard]:
    """Add a stock Cloze note with ``Text = text`` and render every card Anki generated."""
    col, deck_id = _collection()
    note = col.new_note(col.models.by_name("Cloze"))  # type: ignore[arg-type]
    note["Text"] = text
    col.add_note(note, deck_id)
    cards = []
    for card in sorted(note.cards(), key=lambda c: c.ord):
        cards.append(RenderedCard(card.ord + 1, _body(card.question()), _body(card.answer())))
    col.remove_notes([note.id])
    return cards


def _body(rendered: str) -> str:
    """Drop the ``<style>`` block Anki prepends to every rendered side, and the highlight wrappers."""
    return unwrap_highlight(re.sub(r"(?s)<style>.*?</style>", "", rendered))


def unwrap_highlight(side: str) -> str:
    r"""``side`` without deckbuild's ``\class{db-cN}{...}`` around math deletions (kept: their body).

    The wrapper only colours card N's revealed deletion (test_cloze_highlight checks it);
    the tests comparing what a side says compare the text without it.
    """
    out: list[str] = []
    pos = 0
    for match in re.finditer(r"\\class\{db-c\d+\}\{", side):
        if match.start() < pos:
            continue
        out.append(side[pos : match.start()])
        depth, i = 1, match.end()
        while i < len(side) and depth:
            if side[i] == "\\":
                i += 2  # an escaped brace \{ or \} does not count
                continue
            depth += {"{": 1, "}": -1}.get(side[i], 0)
            i += 1
        out.append(side[match.end() : i - 1])
        pos = i
    out.append(side[pos:])
    joined = "".join(out)
    return unwrap_highlight(joined) if joined != side and "\\class{db-c" in joined else joined


def visible_text(fragment: str) -> str:
    """Text of an HTML fragment: comments and tags (with attributes) removed, unescaped."""
    fragment = re.sub(r"(?s)<!--.*?-->", "", fragment)
    fragment = re.sub(r"(?s)<[^>]*>", "", fragment)
    return html.unescape(fragment)


def strip_math_wrapper(side: str) -> str:
    r"""The LaTeX inside the ``\[ ... \]`` of a rendered formula card."""
    m = re.search(r"(?s)\\\[(.*)\\\]", side)
    assert m is not None, f"no \\[ \\] in {side!r}"
    return m.group(1)
