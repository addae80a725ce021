"""The deck deckbuild ships: the 163 seed questions, tagged and readable, in real Anki."""

from __future__ import annotations

import re
from collections import Counter

from ankiutil import notes_by_card_id, visible_text
from conftest import REPO

from deckbuild.importer.seeds import parse_seed

BOILERPLATE = (
    "Sherlock",
    "recruiter",
    "Similar Posts",
    "Free to read",
    "Back to interview questions",
    "Team Sherlock",
    "no account needed",
)


def _qa_notes(col):
    return {cid: n for cid, n in notes_by_card_id(col).items() if "Question" in n}


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_exactly_the_163_seed_questions(shipped_collection) -> None:
    """Every seed question has its card; a front differs from its seed question only where docs/curation.md says why."""
    import yaml

    notes = _qa_notes(shipped_collection)
    seeds = [q for f in ("training-dynamics-43.txt", "deep-learning-120.txt") for q in parse_seed(REPO / "seeds" / f).questions]
    assert len(seeds) == 163
    cards = [c for f in sorted((REPO / "cards").glob("*.yaml")) for c in yaml.safe_load(f.read_text()) if "question" in c]
    assert len(notes) == len(cards) == 163
    assert sorted(_norm(c["origin"]["question"]) for c in cards) == sorted(_norm(q.question) for q in seeds)
    curation = (REPO / "docs" / "curation.md").read_text(encoding="utf-8")
    reworded = []
    for card in cards:
        front = _norm(visible_text(notes[card["id"]]["Question"]))
        if front != _norm(card["origin"]["question"]):
            reworded.append(card["id"])
            assert f"| {card['id']} |" in curation, f"{card['id']}: question reworded without a line in docs/curation.md"
    assert len(reworded) <= 20, reworded  # the duplicate pairs made distinct, not a rewrite of the deck


def test_tags_difficulty_topic_source(shipped_collection) -> None:
    notes = _qa_notes(shipped_collection)
    difficulties = Counter()
    for card_id, note in notes.items():
        diff = [t for t in note.tags if t.startswith("difficulty::")]
        assert len(diff) == 1, card_id
        difficulties[diff[0]] += 1
        assert any(t.startswith("topic::") for t in note.tags), card_id
        assert [t for t in note.tags if t.startswith("source::")] in (
            ["source::training-dynamics-43"],
            ["source::deep-learning-120"],
        )
    # Judged per card in the curation (docs/curation.md), no longer the seed level copied.
    assert difficulties == {"difficulty::easy": 44, "difficulty::medium": 90, "difficulty::hard": 29}


def test_no_boilerplate_in_any_note(shipped_collection) -> None:
    for card_id, note in notes_by_card_id(shipped_collection).items():
        text = " ".join(note.fields)
        for phrase in BOILERPLATE:
            assert phrase.lower() not in text.lower(), (card_id, phrase)


def test_front_is_the_question_alone_and_back_leads_with_short_answer(shipped_collection) -> None:
    notes = _qa_notes(shipped_collection)
    for card_id, note in notes.items():
        card = note.cards()[0]
        front = visible_text(card.question())
        question = visible_text(note["Question"])
        # Only the quiet meta line (difficulty, topics) may precede the question.
        assert front.endswith(question), card_id
        assert visible_text(note["Answer"]) not in front
        back_html = card.answer().split("</style>", 1)[-1]
        answer_at = back_html.index('class="db-answer"')
        assert 'class="db-details' not in back_html[:answer_at], card_id
        if note["Details"]:
            assert back_html.index('class="db-details') > answer_at
        # A short answer: a few lines on a phone.
        assert len(visible_text(note["Answer"])) < 700, card_id
