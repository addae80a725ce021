"""Broken projects: every problem located, coded, reported at once; nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import copy_project, write_tree

from deckbuild.cli import main

GOOD_CARD = """\
- id: ok-card
  question: Fine?
  answer: Yes.
  difficulty: easy
  topics: [foundations::text]
"""

# name -> (files to write over the sample project, expected "file:line[:col]: CODE" prefixes)
BROKEN: dict[str, tuple[dict[str, str | bytes], list[str]]] = {
    "yaml-syntax": ({"cards/bad.yaml": "- id: x\n  question: [unclosed\n  answer: y\n"}, ["cards/bad.yaml:3:9: E100"]),
    "duplicate-id-across-files": (
        {"cards/dup.yaml": "- id: escaping\n  question: Q\n  answer: A\n  difficulty: easy\n  topics: [a::b]\n"},
        ["cards/dup.yaml:1:7: E108 duplicate card id 'escaping': also at cards/basics.yaml:1:7"],
    ),
    "unknown-difficulty": (
        {"cards/bad.yaml": GOOD_CARD.replace("difficulty: easy", "difficulty: mediun")},
        ["cards/bad.yaml:4:15: E107 card 'ok-card': difficulty: expected one of easy, medium, hard; got 'mediun'"],
    ),
    "missing-required-key": (
        {"cards/bad.yaml": GOOD_CARD.replace("  answer: Yes.\n", "")},
        ["cards/bad.yaml:1:3: E105 card 'ok-card': 'answer' is required"],
    ),
    "unknown-key": (
        {"cards/bad.yaml": GOOD_CARD + "  hint: typo\n"},
        ["cards/bad.yaml:6:3: E104 unknown key 'hint'"],
    ),
    "key-twice": (
        {"cards/bad.yaml": GOOD_CARD + "  answer: Again.\n"},
        ["cards/bad.yaml:6:3: E101 key 'answer' is given twice in one mapping (first at line 3)"],
    ),
    "non-utf8": (
        {"cards/bad.yaml": GOOD_CARD.replace("Fine?", "Fin\xe9?").encode("latin-1")},
        ["cards/bad.yaml:2:16: E102 file is not valid UTF-8"],
    ),
    "missing-media": (
        {"cards/bad.yaml": GOOD_CARD + "  image:\n    file: nowhere.png\n    alt: Nothing.\n"},
        ["cards/bad.yaml:7:5: E111 card 'ok-card': image 'nowhere.png' not found in media/"],
    ),
}


@pytest.fixture
def built_sample(tmp_path: Path) -> tuple[Path, bytes, bytes]:
    project = copy_project("sample", tmp_path)
    result = CliRunner().invoke(main, ["build", "-C", str(project)])
    assert result.exit_code == 0, result.output
    apkg = project / "dist" / "deckbuild-sample-1.0.0.apkg"
    return project, apkg.read_bytes(), (project / "deckbuild.lock").read_bytes()


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_check_and_build_on_broken_project(built_sample: tuple[Path, bytes, bytes], case: str) -> None:
    project, apkg_before, lock_before = built_sample
    files, expected = BROKEN[case]
    write_tree(project, files)
    runner = CliRunner()
    checked = runner.invoke(main, ["check", "-C", str(project)])
    assert checked.exit_code == 1, checked.output
    for prefix in expected:
        assert any(line.startswith(prefix) for line in checked.stderr.splitlines()), (prefix, checked.stderr)
    assert "Traceback" not in checked.output
    built = runner.invoke(main, ["build", "-C", str(project)])
    assert built.exit_code == 1, built.output
    for prefix in expected:  # build reports the same problems as check
        assert any(line.startswith(prefix) for line in built.stderr.splitlines()), (prefix, built.stderr)
    assert "Traceback" not in built.output
    assert built.exception is None or isinstance(built.exception, SystemExit)
    assert (project / "dist" / "deckbuild-sample-1.0.0.apkg").read_bytes() == apkg_before
    assert (project / "deckbuild.lock").read_bytes() == lock_before


def test_all_problems_reported_at_once(sample: Path) -> None:
    write_tree(
        sample,
        {
            "cards/a.yaml": GOOD_CARD.replace("difficulty: easy", "difficulty: mediun"),
            "cards/b.yaml": GOOD_CARD.replace("ok-card", "escaping") + "  hint: x\n",
        },
    )
    result = CliRunner().invoke(main, ["check", "-C", str(sample), "--format", "json"])
    assert result.exit_code == 1
    codes = sorted(p["code"] for p in json.loads(result.stdout) if p["severity"] != "silenced")
    assert codes == ["E104", "E107", "E108"]


def test_real_process_has_no_traceback_and_exit_1(tmp_path: Path) -> None:
    write_tree(tmp_path, {"deck.yaml": "name: X\nnamespace: x\nversion: 1.0\n", "cards/a.yaml": "- id: [\n"})
    proc = subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", "check", "-C", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "deck.yaml:3:10: E106 'version': expected text; got float 1.0" in proc.stderr
    assert "cards/a.yaml:2:1: E100 YAML syntax error" in proc.stderr


def test_check_on_good_project_is_clean(sample: Path) -> None:
    result = CliRunner().invoke(main, ["check", "-C", str(sample)])
    assert result.exit_code == 0, result.output
    assert "0 error(s), 0 warning(s)" in result.stderr


CLOZE_RULES = """\
- id: q
  question: Which rates?
  answer: Some.
  difficulty: easy
  topics: [a::b]
- id: f1
  formula: 'p = {{c1::0.5::about 0.5}} (F01)'
  context: A rate.
  of: q
- id: f2
  fact: 'Dropout keeps {{c1::0.5}} of units.'
  of: q
"""


def test_cloze_rules_have_codes_and_exact_text(sample: Path) -> None:
    """Issue 12: a hint containing its answer (error); a deletion repeated by a sibling note, an
    internal code, a fact without context (warnings; --strict fails them)."""
    write_tree(sample, {"cards/rules.yaml": CLOZE_RULES})
    result = CliRunner().invoke(main, ["check", "-C", str(sample)])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    for expected in (
        "cards/rules.yaml:7:17: E413 card 'f1': c1: the hint 'about 0.5' gives away its answer '0.5'; "
        "expected a hint that does not contain it",
        "cards/rules.yaml:7:40: E415 warning: card 'f1': formula: internal code '(F01)' in what the learner reads; "
        "remove it (keep bookkeeping in YAML comments or tags)",
        "cards/rules.yaml:10:3: E416 warning: card 'f2': a fact without 'context': expected a line saying what the fact is about",
        "cards/rules.yaml:11:24: E414 warning: card 'f2': c1 deletes '0.5', as card 'f1' (also of 'q') does; "
        "merge the two notes or delete different text",
    ):
        assert expected in lines, result.stderr


def test_a_hint_that_is_not_its_answer_passes(sample: Path) -> None:
    write_tree(
        sample,
        {
            "cards/rules.yaml": CLOZE_RULES.replace("about 0.5", "a fraction")
            .replace(" (F01)", "")
            .replace("of units.'\n  of: q", "of units.'\n  context: Dropout.\n  of: q")
            .replace("{{c1::0.5}} of", "{{c1::half}} of")
        },
    )
    result = CliRunner().invoke(main, ["check", "-C", str(sample)])
    assert result.exit_code == 0, result.stderr
    assert "E41" not in result.stderr
