"""Seed parsing: counts and invariants of both seed files, and clear errors on bad files."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from deckbuild.importer.seeds import (
    KIND_QUESTION_BANK,
    KIND_TRAINING_DYNAMICS,
    SeedFormatError,
    parse_seed,
)

SEEDS = Path(__file__).resolve().parents[1] / "seeds"
TD = SEEDS / "training-dynamics-43.txt"
BANK = SEEDS / "deep-learning-120.txt"
BOILERPLATE = re.compile(
    r"Sherlock|recruiter|Similar Posts|Free to read|Back to interview|Further Reading|"
    r"Interview Questions for|Interview Questions and Answers|no account needed",
    re.IGNORECASE,
)


def test_training_dynamics_counts() -> None:
    doc = parse_seed(TD)
    assert doc.kind == KIND_TRAINING_DYNAMICS
    assert doc.slug == "training-dynamics-43"
    assert len(doc.questions) == 43
    assert Counter(q.difficulty for q in doc.questions) == {
        "easy": 6,
        "medium": 23,
        "hard": 14,
    }
    assert sum(len(q.answer) for q in doc.questions) == 175
    assert [q.number for q in doc.questions] == list(range(1, 44))
    assert doc.questions[4].ref == "training-dynamics-43#q05"


def test_question_bank_counts() -> None:
    doc = parse_seed(BANK)
    assert doc.kind == KIND_QUESTION_BANK
    assert len(doc.questions) == 120
    assert [q.number for q in doc.questions] == list(range(1, 121))
    assert Counter(q.level for q in doc.questions) == {
        "beginner": 40,
        "intermediate": 40,
        "experienced": 40,
    }
    multi = [q.number for q in doc.questions if len(q.answer) > 1]
    assert multi == [42, 67]
    assert doc.questions[47].ref == "deep-learning-120#q048"


def test_total_difficulty() -> None:
    questions = parse_seed(TD).questions + parse_seed(BANK).questions
    assert Counter(q.difficulty for q in questions) == {
        "easy": 46,
        "medium": 63,
        "hard": 54,
    }


def test_question_text_is_the_seed_line() -> None:
    lines = TD.read_text(encoding="utf-8").split("\n")
    for q in parse_seed(TD).questions:
        assert lines[q.line - 1] == q.question
    lines = BANK.read_text(encoding="utf-8").split("\n")
    for q in parse_seed(BANK).questions:
        assert lines[q.line - 1] == f"{q.number}. {q.question}"


def test_no_boilerplate_in_any_question_or_answer() -> None:
    for doc in (parse_seed(TD), parse_seed(BANK)):
        for q in doc.questions:
            for text in (q.question, *q.answer):
                assert not BOILERPLATE.search(text), (q.ref, text[:80])


def test_format_is_recognised_from_content_not_name(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(BANK.read_bytes())
    (tmp_path / "b.txt").write_bytes(TD.read_bytes())
    assert parse_seed(tmp_path / "a.txt").kind == KIND_QUESTION_BANK
    assert parse_seed(tmp_path / "b.txt").kind == KIND_TRAINING_DYNAMICS


def _error(tmp_path: Path, text: str, name: str = "seed.txt") -> SeedFormatError:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SeedFormatError) as info:
        parse_seed(path)
    return info.value


def test_empty_file(tmp_path: Path) -> None:
    err = _error(tmp_path, "  \n\n")
    assert err.code == "E301"
    assert str(err).startswith(f"{tmp_path / 'seed.txt'}: E301 ")


def test_unrecognised_file(tmp_path: Path) -> None:
    err = _error(tmp_path, "# My notes\nsome text\n")
    assert err.code == "E302"
    assert err.line == 1
    assert "expected" in err.message and "'# My notes'" in err.message
    assert str(err).startswith(f"{tmp_path / 'seed.txt'}:1:1: E302 ")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "seed.txt"
    path.write_bytes(b"43 interview questions\nWhat?\nmedium- \xff\n")
    with pytest.raises(SeedFormatError) as info:
        parse_seed(path)
    assert info.value.code == "E303" and info.value.line == 3


def test_truncated_training_dynamics_after_question(tmp_path: Path) -> None:
    lines = TD.read_text(encoding="utf-8").split("\n")
    cut = next(i for i, line in enumerate(lines) if line.startswith("What is grokking"))
    err = _error(tmp_path, "\n".join(lines[: cut + 1]))
    assert err.code == "E314"
    assert f"line {cut + 1}" in err.message


def test_truncated_training_dynamics_between_questions(tmp_path: Path) -> None:
    lines = TD.read_text(encoding="utf-8").split("\n")
    err = _error(tmp_path, "\n".join(lines[:60]))
    assert err.code == "E315"
    assert "announces 43" in err.message


def test_training_dynamics_question_without_difficulty(tmp_path: Path) -> None:
    text = TD.read_text(encoding="utf-8").replace("medium- For each mini-batch", "- For each mini-batch", 1)
    err = _error(tmp_path, text)
    assert (err.code, err.line) == ("E311", 3)


def test_truncated_bank_in_answers(tmp_path: Path) -> None:
    lines = BANK.read_text(encoding="utf-8").split("\n")
    err = _error(tmp_path, "\n".join(lines[:250]))
    assert err.code == "E328"
    assert "120 questions" in err.message


def test_bank_without_trailer_is_truncated(tmp_path: Path) -> None:
    lines = BANK.read_text(encoding="utf-8").split("\n")
    err = _error(tmp_path, "\n".join(lines[:387]))
    assert err.code == "E329"


def test_bank_answer_must_repeat_listed_question(tmp_path: Path) -> None:
    text = BANK.read_text(encoding="utf-8").replace("5. How do you calculate", "5. How would you calculate", 1)
    err = _error(tmp_path, text)
    assert err.code == "E323"
    assert err.line is not None and err.line > 140


def test_bank_numbering_gap(tmp_path: Path) -> None:
    text = BANK.read_text(encoding="utf-8").replace("\n7. ", "\n8. ", 1)
    err = _error(tmp_path, text)
    assert err.code == "E325"
    assert "expected 7" in err.message
