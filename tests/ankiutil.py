"""Helpers around the official Anki backend (PyPI `anki`): import, render, review."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from anki.collection import Collection, ImportAnkiPackageOptions, ImportAnkiPackageRequest


def new_collection(folder: Path) -> Collection:
    folder.mkdir(parents=True, exist_ok=True)
    return Collection(str(folder / "collection.anki2"))


def import_package(col: Collection, path: Path, **options: Any) -> Any:
    """Import with Anki's default options unless told otherwise; returns the import log."""
    request = ImportAnkiPackageRequest(package_path=str(path), options=ImportAnkiPackageOptions(**options))
    log = col.import_anki_package(request).log
    col.models._clear_cache()
    return log


def notes_by_card_id(col: Collection) -> dict[str, Any]:
    """Our notes keyed by their CardId field."""
    out = {}
    for nid in col.find_notes(""):
        note = col.get_note(nid)
        if "CardId" in note:
            out[note["CardId"]] = note
    return out


def visible_text(rendered_html: str) -> str:
    """What a learner reads: style, script and tags dropped, entities decoded, space collapsed."""
    text = re.sub(r"<(style|script)>.*?</\1>", " ", rendered_html, flags=re.DOTALL)
    text = re.sub(r"<[^>]+>", " ", text)
    return re.sub(r"\s+", " ", html.unescape(text)).strip()


def answer_all(col: Collection, ease: int = 3) -> None:
    """Review every card once (as a learner would), creating revlog entries."""
    for cid in col.find_cards(""):
        card = col.get_card(cid)
        card.start_timer()
        col.sched.answerCard(card, ease)


def history(col: Collection) -> dict[str, list[tuple[int, int, int, int]]]:
    """Per note (CardId): each card's (ord, interval, due, reps) and its revlog length."""
    out: dict[str, list[tuple[int, int, int, int]]] = {}
    for card_id, note in notes_by_card_id(col).items():
        rows = []
        for card in note.cards():
            revlog = col.db.scalar("select count() from revlog where cid = ?", card.id)
            rows.append((card.ord, card.ivl, card.due, card.reps * 1000 + revlog))
        out[card_id] = sorted(rows)
    return out
