"""Serve's deck-wide checks from each card file's share (deckbuild/file_checks.py).

Each save below is planned as serve plans it (one Memo across saves, no package) and its
problems are compared with a fresh `check` of the same sources: every save that makes two
files touch -- an id, a GUID or a cloze answer in both, a card named that is gone, an `of`
naming a fact, a changed kind or GUID against the last build -- must report exactly what
`check` reports, in the same order.  And a save of a valid deck must not walk the deck:
the files it did not change keep their shares, and no check runs over every card.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import write_tree

from deckbuild import file_checks, validate
from deckbuild.apply import apply
from deckbuild.errors import Problem, ProjectInvalid
from deckbuild.incremental.memo import Memo
from deckbuild.notetypes import fields
from deckbuild.plan import plan
from deckbuild.release import identity


def _qa(card_id: str, extra: str = "") -> str:
    return f"- id: {card_id}\n  question: What does {card_id} do?\n  answer: It does {card_id}.\n  difficulty: easy\n  topics: [t]\n{extra}"


def _fact(card_id: str, of: str, answer: str, extra: str = "") -> str:
    return f"- id: {card_id}\n  fact: 'The value is {{{{c1::{answer}}}}} here.'\n  context: Values.\n  of: {of}\n{extra}"


FILES = {
    "deck.yaml": "name: Shares\nnamespace: shares\nversion: 1.0.0\n",
    "cards/a.yaml": _qa("a1") + _qa("a2") + _fact("a3", "a1", "seven"),
    "cards/b.yaml": _qa("b1") + _qa("b2", "  related: [a2]\n"),
    "cards/c.yaml": _qa("c1") + _fact("c2", "c1", "nine"),
}

# Each save: the card files it rewrites (the others keep their bytes, so their cards stay the
# same objects in the memo), and what it is about.
SAVES: list[tuple[str, dict[str, str]]] = [
    ("an answer edited", {"cards/b.yaml": _qa("b1").replace("It does", "It now does") + _qa("b2", "  related: [a2]\n")}),
    ("an id given in two files (E108)", {"cards/c.yaml": _qa("c1") + _fact("c2", "c1", "nine") + _qa("a2")}),
    ("an id given twice in one file (E108)", {"cards/c.yaml": _qa("c1") + _fact("c2", "c1", "nine") + _qa("c1")}),
    (
        "a card named that is gone (E110)",
        {"cards/a.yaml": _qa("a1") + _fact("a3", "a1", "seven"), "cards/c.yaml": FILES["cards/c.yaml"]},
    ),
    ("an `of` naming a fact (E110)", {"cards/a.yaml": FILES["cards/a.yaml"], "cards/c.yaml": _fact("c2", "a3", "nine")}),
    ("one answer deleted by clozes of one question in two files (E414)", {"cards/c.yaml": _fact("c2", "a1", "seven")}),
    ("the same answer again in the same file", {"cards/c.yaml": _fact("c2", "a1", "seven") + _fact("c3", "a1", "seven")}),
    (
        "one GUID in two files (E222)",
        {"cards/b.yaml": _qa("b1", "  guid: shared-guid\n"), "cards/c.yaml": _qa("c1", "  guid: shared-guid\n")},
    ),
    ("a built card's GUID changed (E225)", {"cards/b.yaml": _qa("b1", "  guid: another-guid\n"), "cards/c.yaml": _qa("c1")}),
    ("a built question turned into a cloze (E172)", {"cards/b.yaml": _qa("b1") + _fact("b2", "b1", "two")}),
    ("previous_ids naming a live card (E126)", {"cards/b.yaml": _qa("b1") + _qa("b2", "  previous_ids: [c1]\n")}),
    ("a renamed card (previous_ids)", {"cards/b.yaml": _qa("b1") + _qa("b9", "  previous_ids: [b2]\n")}),
    (
        "a question taking the id of a built cloze (E172)",
        {"cards/b.yaml": FILES["cards/b.yaml"], "cards/c.yaml": _qa("c1") + _qa("c9", "  previous_ids: [c2]\n")},
    ),
    ("everything as it was", FILES),
]


def _said(problems: Sequence[Problem]) -> list[tuple[object, ...]]:
    return [(p.location, p.code, p.message, p.severity, p.subject) for p in problems]


def _served(root: Path, memo: Memo) -> list[tuple[object, ...]]:
    """The problems of a save planned as serve plans it: its errors, or its warnings."""
    try:
        planned = plan(root, "build", package=False, memo=memo)
    except ProjectInvalid as invalid:
        return _said(invalid.problems())
    planned.keep_cache()
    return _said(planned.problems)


def _checked(root: Path) -> list[tuple[object, ...]]:
    return _said(plan(root, "check").problems)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    root = write_tree(tmp_path / "deck", FILES)
    apply(plan(root, "build"))  # the record the identity checks compare with
    return root


def test_every_save_reports_exactly_what_check_reports(project: Path) -> None:
    memo = Memo()
    assert _served(project, memo) == _checked(project)
    codes = set()
    for what, files in SAVES:
        write_tree(project, files)
        served = _served(project, memo)
        assert served == _checked(project), what
        codes |= {said[1] for said in served}
    # Each save made the problem it is about (else it would test nothing).
    assert {"E108", "E110", "E414", "E222", "E225", "E172", "E126"} <= codes


def test_a_save_of_a_valid_deck_keeps_the_other_files_shares_and_runs_no_check_over_the_deck(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memo = Memo()
    _served(project, memo)
    before = dict(memo.file_checks)
    ran: list[str] = []
    for module, name in [
        (validate, "validate_cards"),
        (fields, "check_guids"),
        (identity, "_check_kept_guids"),
        (identity, "_check_kinds"),
    ]:
        monkeypatch.setattr(module, name, _recorded(ran, name, getattr(module, name)))
    write_tree(project, SAVES[0][1])
    served = _served(project, memo)
    monkeypatch.undo()
    assert ran == []
    assert served == _checked(project)
    after = memo.file_checks
    assert after["cards/a.yaml"] is before["cards/a.yaml"] and after["cards/c.yaml"] is before["cards/c.yaml"]
    assert after["cards/b.yaml"] is not before["cards/b.yaml"]  # the edited file's share is made again


def test_the_shares_of_a_deck_with_an_id_twice_are_not_used(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memo = Memo()
    write_tree(project, SAVES[1][1])
    ran: list[str] = []
    monkeypatch.setattr(validate, "validate_cards", _recorded(ran, "validate_cards", validate.validate_cards))
    served = _served(project, memo)
    monkeypatch.undo()
    assert ran == ["validate_cards"] and served == _checked(project)
    assert file_checks.ids_once(list(memo.file_checks.values())) is None


def _recorded(ran: list[str], name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def recorded(*args: Any, **kwargs: Any) -> Any:
        ran.append(name)
        return real(*args, **kwargs)

    return recorded


def test_a_new_namespace_makes_every_share_again(project: Path) -> None:
    memo = Memo()
    _served(project, memo)
    before = dict(memo.file_checks)
    write_tree(project, {"deck.yaml": FILES["deck.yaml"].replace("namespace: shares", "namespace: other")})
    served = _served(project, memo)
    assert served == _checked(project) and "E170" in {said[1] for said in served}
    assert all(memo.file_checks[path] is not share for path, share in before.items())
    assert {share.namespace for share in memo.file_checks.values()} == {"other"}
