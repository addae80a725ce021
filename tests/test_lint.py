"""The learning lint (E420-E428): one planted card per code, every behaviour of `lint:`
silences, and the shipped deck passing it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import copy_project, write_tree

from deckbuild.cli import main

REPO = Path(__file__).resolve().parent.parent

QUESTION = """\
- id: q
  question: Which rates?
  answer: Some.
  difficulty: easy
  topics: [a::b]
"""

# code -> (a card planted after QUESTION in cards/lint.yaml, the expected "file:line:col: CODE" prefix)
LONG_ANSWER = " ".join(f"w{i}" for i in range(76))
PLANTED: dict[str, tuple[str, str]] = {
    "E420": (
        f"- id: long\n  question: Why?\n  answer: {LONG_ANSWER}\n  difficulty: easy\n  topics: [a::b]\n",
        "cards/lint.yaml:8:11: E420 warning: card 'long': the answer has 76 words, more than a phone screen's 75",
    ),
    "E421": (
        "- id: set\n  question: What does Adam keep?\n  answer: Weights, gradients, first moments and second moments.\n"
        "  difficulty: easy\n  topics: [a::b]\n",
        "cards/lint.yaml:8:11: E421 warning: card 'set': the answer lists 4 items (4 or more)",
    ),
    "E422": (
        "- id: many\n  fact: 'Adaptive optimizers: {{c1::AdaGrad, RMSProp, Adam and AdamW}}.'\n  context: Optimizers.\n  of: q\n",
        "cards/lint.yaml:7:31: E422 warning: card 'many': c1 hides 4 items (4 or more) in one deletion",
    ),
    "E423": (
        "- id: told\n  fact: 'Adam keeps {{c1::two moment estimates}} per parameter.'\n"
        "  context: Adam's two moment estimates\n  of: q\n",
        "cards/lint.yaml:7:21: E423 warning: card 'told': c1: its answer 'two moment estimates' is shown on the same front "
        "(in the context)",
    ),
    "E424": (
        "- id: eliminate\n  formula: 'L_{\\text{out}} = \\frac{L + 2P - K}{{{c1::S}}} + 1'\n"
        "  context: 'Output length with padding \\(P\\), kernel \\(K\\) and stride \\(S\\).'\n  of: q\n",
        "cards/lint.yaml:7:48: E424 warning: card 'eliminate': c1: the context names S, which the formula shows only inside "
        "this deletion",
    ),
    "E425": (
        "- id: ratio\n  fact: 'With 10 and 30 tokens on two ranks, their losses weigh in a {{c1::1:3}} ratio.'\n"
        "  context: Token-weighted loss.\n  of: q\n",
        "cards/lint.yaml:7:70: E425 warning: card 'ratio': c1: its answer '1:3' is the ratio 10 / 30, both on the front",
    ),
}


def _check(project: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["check", "-C", str(project), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def test_each_code_fires_on_its_planted_card_at_its_place(sample: Path) -> None:
    for code, (card, expected) in PLANTED.items():
        write_tree(sample, {"cards/lint.yaml": QUESTION + card})
        status, _out, err = _check(sample)
        lines = [line for line in err.splitlines() if " E42" in line]
        assert status == 0, err  # warnings: the deck still builds
        assert [line[: len(expected)] for line in lines] == [expected], (code, err)


def test_a_symbol_named_in_the_contexts_prose_is_found_by_elimination_too(sample: Path) -> None:
    card = PLANTED["E424"][0].replace("\\(P\\)", "P").replace("\\(K\\)", "K").replace("\\(S\\)", "S")
    assert "stride S." in card
    write_tree(sample, {"cards/lint.yaml": QUESTION + card})
    _status, _out, err = _check(sample)
    assert "cards/lint.yaml:7:48: E424 warning: card 'eliminate': c1: the context names S," in err, err
    write_tree(sample, {"cards/lint.yaml": QUESTION + card.replace("{{c1::S}}", "{{c1::S}} + 0 \\cdot S")})
    status, _out, err = _check(sample, "--strict")  # S shown outside the deletion: nothing to eliminate
    assert status == 0 and "0 error(s), 0 warning(s)" in err, err


def test_build_prints_the_warnings_and_still_writes_the_package(sample: Path) -> None:
    write_tree(sample, {"cards/lint.yaml": QUESTION + PLANTED["E425"][0]})
    result = CliRunner().invoke(main, ["build", "-C", str(sample)])
    assert result.exit_code == 0, result.output
    assert PLANTED["E425"][1] in result.stderr and "1 warning(s)" in result.stderr
    assert list((sample / "dist").glob("*.apkg"))


def test_strict_fails_on_a_lint_warning(sample: Path) -> None:
    write_tree(sample, {"cards/lint.yaml": QUESTION + PLANTED["E425"][0]})
    assert _check(sample, "--strict")[0] == 1


def test_a_card_without_give_aways_is_clean(sample: Path) -> None:
    clean = PLANTED["E425"][0].replace("With 10 and 30 tokens", "With unequal token counts")
    clean += PLANTED["E423"][0].replace("Adam's two moment estimates", "What Adam keeps")
    write_tree(sample, {"cards/lint.yaml": QUESTION + clean})
    status, _out, err = _check(sample, "--strict")
    assert status == 0 and "0 error(s), 0 warning(s)" in err, err


SILENCED = PLANTED["E425"][0] + "  lint:\n    E425: the card asks for the ratio, shown as a worked example\n"


def test_a_silence_hides_the_warning_and_json_shows_it_with_its_reason(sample: Path) -> None:
    write_tree(sample, {"cards/lint.yaml": QUESTION + SILENCED})
    status, _out, err = _check(sample, "--strict")
    assert status == 0, err
    assert "E425" not in err and "0 error(s), 0 warning(s), 2 silenced by 'lint:'" in err  # and basics.yaml's
    _status, out, _err = _check(sample, "--format", "json")
    shown = [p for p in json.loads(out) if p["path"] == "cards/lint.yaml"]
    assert [(p["code"], p["severity"], p["line"], p["col"], p["reason"]) for p in shown] == [
        ("E425", "silenced", 7, 70, "the card asks for the ratio, shown as a worked example")
    ]
    assert "is the ratio 10 / 30" in shown[0]["message"]


def test_a_silence_of_a_code_that_does_not_fire_is_reported(sample: Path) -> None:
    write_tree(sample, {"cards/lint.yaml": QUESTION + SILENCED.replace("E425: the", "E423: the")})
    status, _out, err = _check(sample)
    assert status == 0
    assert (
        "cards/lint.yaml:11:11: E427 warning: card 'ratio': 'lint' silences E423, which does not fire on this card: "
        "remove the silence" in err
    ), err
    assert "cards/lint.yaml:7:70: E425 warning" in err  # silencing another code leaves this one
    assert _check(sample, "--strict")[0] == 1


def test_a_malformed_silence_is_an_error_with_its_place(sample: Path) -> None:
    cases = {
        "  lint: E425\n": "cards/lint.yaml:10:9: E426 card 'ratio': 'lint': expected a mapping of a lint code to the reason",
        "  lint:\n    E452: why\n": "cards/lint.yaml:11:5: E426 card 'ratio': 'lint': 'E452' is not a learning-lint warning; "
        "did you mean 'E425'?",
        "  lint:\n    E414: why\n": "cards/lint.yaml:11:5: E426 card 'ratio': 'lint': 'E414' is not a learning-lint warning",
        "  lint:\n    E425: ''\n": "cards/lint.yaml:11:11: E426 card 'ratio': 'lint': E425: expected the reason",
    }
    for lint, expected in cases.items():
        write_tree(sample, {"cards/lint.yaml": QUESTION + PLANTED["E425"][0] + lint})
        status, _out, err = _check(sample)
        assert status == 1, (lint, err)
        assert any(line.startswith(expected) for line in err.splitlines()), (lint, err)


def test_lint_is_a_card_key_that_near_misses_suggest(sample: Path) -> None:
    write_tree(sample, {"cards/lint.yaml": QUESTION + PLANTED["E425"][0] + "  lnt:\n    E425: why\n"})
    status, _out, err = _check(sample)
    assert status == 1
    assert "cards/lint.yaml:10:3: E104 unknown key 'lnt'; did you mean 'lint'?" in err, err


def test_a_silence_on_a_note_type_with_a_lint_field_is_refused(tmp_path: Path) -> None:
    project = copy_project("declared", tmp_path)
    notetype = project / "notetypes" / "cloze-extra" / "notetype.yaml"
    notetype.write_text(notetype.read_text(encoding="utf-8").replace("[Text, Extra, Source]", "[Text, Extra, Source, Lint]"))
    cards = project / "cards" / "clozes.yaml"
    cards.write_text(
        cards.read_text(encoding="utf-8").replace(
            "    Extra: Since the *10th* century.\n", "    Extra: Since the *10th* century.\n  lint: {E423: why}\n", 1
        ),
        encoding="utf-8",
    )
    status, _out, err = _check(project)
    assert status == 1
    assert (
        "cards/clozes.yaml:7:9: E428 card 'capital-france': 'lint' is the key that silences learning-lint warnings, "
        "but note type 'cloze-extra' has a field 'Lint'" in err
    ), err


def test_a_declared_cloze_field_is_linted_and_can_be_silenced(tmp_path: Path) -> None:
    project = copy_project("declared", tmp_path)
    cards = project / "cards" / "clozes.yaml"
    text = cards.read_text(encoding="utf-8")
    given = text.replace(  # quoted, so the column is exact (a plain scalar's columns are best effort)
        "Text: Paris is the capital of {{c1::France}}, on the {{c2::Seine}}.",
        "Text: 'Paris is the capital of {{c1::France}}, on the {{c2::Seine}}; France is in Europe.'",
        1,
    )
    assert given != text
    cards.write_text(given, encoding="utf-8")
    status, _out, err = _check(project)
    assert status == 0, err
    assert (
        "cards/clozes.yaml:5:36: E423 warning: card 'capital-france': c1: its answer 'France' is shown on the same "
        "front (in the visible field 'Text')" in err
    ), err
    silenced = given.replace(
        "    Extra: Since the *10th* century.\n", "    Extra: Since the *10th* century.\n  lint: {E423: why}\n", 1
    )
    cards.write_text(silenced, encoding="utf-8")
    status, _out, err = _check(project)
    assert status == 0 and "E423" not in err and "1 silenced by 'lint:'" in err, err


def test_the_shipped_deck_passes_with_every_silence_explained() -> None:
    """0 warnings on the shipped deck; at most 10 silences, each with a reason and each listed in
    docs/curation.md's "Learning-lint silences" section."""
    status, out, err = _check(REPO, "--format", "json")
    shown = json.loads(out)
    assert status == 0, err
    assert [p for p in shown if p["severity"] != "silenced"] == []
    silenced = [p for p in shown if p["severity"] == "silenced"]
    assert len(silenced) <= 10
    curation = (REPO / "docs" / "curation.md").read_text(encoding="utf-8")
    section = curation.split("## Learning-lint silences", 1)[1].split("\n## ", 1)[0]
    for entry in silenced:
        assert entry["reason"].strip()
        card = entry["message"].split("'")[1]
        assert f"`{card}`" in section and entry["code"] in section, (card, entry["code"])
