"""cards/*.yaml as the importer reads and rewrites them: located load, key order, readable dump."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from deckbuild.errors import LocatedError, Location
from deckbuild.yamlload import load_yaml, to_plain

CARD_KEY_ORDER = (
    "id",
    "question",
    "answer",
    "details",
    "difficulty",
    "topics",
    "source",
    "related",
    "duplicate_of",
    "tags",
    "missing_code",
    "origin",
)
"""Key order of docs/format.md; keys other tools add keep their place among these."""


class CardsFileError(LocatedError):
    """An existing cards/*.yaml file the importer cannot safely rewrite."""

    def __init__(self, path: Path, code: str, message: str) -> None:
        super().__init__(Location(str(path)), code, message)


class _CardDumper(yaml.SafeDumper):
    """Deterministic, readable YAML: block scalars for multi-line text, indented lists."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_CardDumper.add_representer(str, _represent_str)


def dump_cards(cards: list[dict[str, Any]]) -> str:
    """A cards file: one YAML list, a blank line between cards (readable diffs)."""
    chunks = [
        yaml.dump(
            [card],
            Dumper=_CardDumper,
            allow_unicode=True,
            sort_keys=False,
            width=1_000_000,
            default_flow_style=False,
        )
        for card in cards
    ]
    return "\n".join(chunks)


def load_cards(cards_dir: Path) -> dict[Path, list[dict[str, Any]]]:
    """Every cards/*.yaml as a list of dicts; refuses files it could not rewrite faithfully."""
    files: dict[Path, list[dict[str, Any]]] = {}
    for path in sorted(cards_dir.glob("*.yaml")) if cards_dir.is_dir() else []:
        # The compiler's loader: deep nesting, aliases, bad UTF-8 and duplicate keys are
        # problems to report, where plain PyYAML would crash or silently lose data.
        located, problems = load_yaml(path, path.name)
        if problems:
            raise CardsFileError(path, "E340", f"cannot be rewritten safely: {problems[0].format()}")
        data = to_plain(located)
        if data is None:
            data = []
        if not isinstance(data, list) or not all(isinstance(c, dict) for c in data):
            raise CardsFileError(path, "E341", "expected a YAML list of cards (mappings)")
        files[path] = data
    return files


def set_key(card: dict[str, Any], key: str, value: Any) -> None:
    """Set a key; a new key goes to its format.md position, other keys keep theirs."""
    if value is None:
        card.pop(key, None)
        return
    if key in card:
        card[key] = value
        return
    rank = CARD_KEY_ORDER.index(key)
    items = list(card.items())
    insert_at = len(items)
    for index, (existing, _) in enumerate(items):
        if existing in CARD_KEY_ORDER and CARD_KEY_ORDER.index(existing) > rank:
            insert_at = index
            break
    items.insert(insert_at, (key, value))
    card.clear()
    card.update(items)


def sort_key(card: dict[str, Any]) -> tuple[str, int, str]:
    """Cards within a file: by source document, then question number."""
    source = str(card.get("source", ""))
    match = re.match(r"^(.*)#q(\d+)$", source)
    if match:
        return match.group(1), int(match.group(2)), str(card.get("id", ""))
    return source, 10**9, str(card.get("id", ""))


def topic_file(cards_dir: Path, topics: list[str]) -> Path:
    """cards/<primary topic>.yaml, e.g. cards/optimization.yaml."""
    return cards_dir / f"{topics[0].split('::')[0]}.yaml"
