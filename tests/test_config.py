"""config.py: deck.yaml becomes a DeckConfig, or every problem as exact `deck.yaml:line:col: CODE message` text."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import write_tree

from deckbuild.cli import main
from deckbuild.config import OPTIONS, load_config
from deckbuild.errors import Location
from deckbuild.model import DeckConfig


def _problems(tmp_path: Path, deck_yaml: str) -> list[str]:
    root = write_tree(tmp_path, {"deck.yaml": deck_yaml})
    config, problems = load_config(root)
    assert config is None
    return [p.format() for p in problems]


def test_a_valid_deck_yaml(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "deck.yaml": """
                name: '  My Deck  '
                namespace: my-deck
                version: 1.2.3
                description: Shown in **Anki**.
                """
        },
    )
    assert load_config(root) == (
        DeckConfig("My Deck", "my-deck", "1.2.3", "Shown in **Anki**.", "dist", Location("deck.yaml", 1, 1)),
        [],
    )


@pytest.mark.parametrize(
    ("deck_yaml", "expected"),
    [
        (
            "name: D\nnamespace: d\nversion: 1.0.0\noutpt: build\n",
            [f"deck.yaml:4:1: E104 unknown key 'outpt'; did you mean 'output'? expected one of {', '.join(OPTIONS)}"],
        ),
        (
            "name: D\nversion: 1.0.0\n",
            ["deck.yaml:1:1: E105 missing required key 'namespace'"],
        ),
        (
            "name: 3\nnamespace: d\nversion: 1.0\n",
            [
                "deck.yaml:1:7: E106 'name': expected text; got int 3",
                "deck.yaml:3:10: E106 'version': expected text; got float 1.0",
            ],
        ),
        (
            "name: D\nnamespace: My Deck\nversion: v1\n",
            [
                "deck.yaml:3:10: E151 'version': expected MAJOR.MINOR.PATCH like 1.0.0; got 'v1'",
                "deck.yaml:2:12: E152 'namespace': expected lower-case letters, digits, '.', '_', '-'; got 'My Deck'",
            ],
        ),
        (
            "name: ' '\nnamespace: d\nversion: 1.0.0\noutput: ../dist\n",
            [
                "deck.yaml:4:9: E112 'output' must be a folder inside the project; got '../dist'",
                "deck.yaml:1:7: E107 'name' must not be empty",
            ],
        ),
        (
            "name: D\nnamespace: d\nversion: 1.0.0\nsources: [a, b]\n",
            ["deck.yaml:4:10: E106 'sources': expected a mapping of document name to title; got LocatedList ['a', 'b']"],
        ),
        (
            "name: D\nnamespace: d\nversion: 1.0.0\nsources:\n  bank-1: ''\n  bank-2: [x]\n",
            [
                "deck.yaml:5:11: E106 'sources': the title of 'bank-1': expected non-empty text; got ''",
                "deck.yaml:6:11: E106 'sources': the title of 'bank-2': expected non-empty text; got ['x']",
            ],
        ),
        ("- name: D\n", ["deck.yaml:1:1: E103 expected a mapping of options; got LocatedList"]),
        ("# nothing yet\n", ["deck.yaml: E103 deck.yaml is empty; expected a mapping with name, namespace, version"]),
        ("name: D\nname: E\n", ["deck.yaml:2:1: E101 key 'name' is given twice in one mapping (first at line 1); keep one"]),
        ("name: &n D\n", ["deck.yaml:1:7: E114 YAML anchors and aliases (&name, *name) are not supported; write the value out"]),
    ],
)
def test_problems_say_where_what_was_expected_and_what_was_found(tmp_path: Path, deck_yaml: str, expected: list[str]) -> None:
    assert _problems(tmp_path, deck_yaml) == expected


def test_no_deck_yaml(tmp_path: Path) -> None:
    config, problems = load_config(tmp_path)
    assert config is None
    assert [p.format() for p in problems] == [f"deck.yaml: E150 no deck.yaml in {tmp_path}; is this a deck project? (see README)"]


def test_check_prints_them_and_fails(tmp_path: Path) -> None:
    write_tree(tmp_path, {"deck.yaml": "name: D\nnamespace: d\nversion: 1.0\n", "cards/a.yaml": "[]\n"})
    result = CliRunner().invoke(main, ["check", "-C", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == "deck.yaml:3:10: E106 'version': expected text; got float 1.0"
    assert "Traceback" not in result.output + result.stderr
