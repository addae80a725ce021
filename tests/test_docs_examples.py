"""Every YAML example in README.md and docs/*.md builds.

A fence (```yaml or ```yml) is a card list, a card file ({deck:, cards:}), a deck.yaml (or a
fragment of one, such as `variants:`), a notetype.yaml, or a fragment of a card (indented
keys such as `diagram:`). Each is placed in a small project of its own — stub cards for the
ids it names but does not define, a picture for each image it shows, a note type for the
note types it uses — and built. A fence that is not meant to build says why on the line
before it: `<!-- not-buildable: reason -->`. The test prints how many it built and excluded.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from deckbuild.commands import build
from deckbuild.errors import ProjectInvalid

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PICTURE = (REPO / "deckbuild" / "scaffold" / "template" / "media" / "parabola.png").read_bytes()
FENCE = re.compile(r"^```ya?ml\s*$")
EXCLUDED = re.compile(r"^<!--\s*not-buildable:\s*(\S.*?)\s*-->$")
BASE_DECK = {"name": "Docs Example", "namespace": "docs-example", "version": "1.0.0"}
DECK_CARDS = [
    {
        "id": "lr-schedule",
        "question": "Why warm the learning rate up?",
        "answer": "Early updates are huge while optimizer statistics are poor.",
        "difficulty": "hard",
        "topics": ["optimization::lr-schedule"],
        "source": "deep-learning-120#q1",
    },
    {"id": "formula-lr", "formula": "\\eta_t = {{c1::\\eta_{max} t / T}}", "context": "Linear warmup.", "of": "lr-schedule"},
    {"id": "fact-lr", "fact": "Warmup often lasts {{c1::a few thousand}} steps.", "context": "Warmup.", "of": "lr-schedule"},
]
STUB_NOTETYPE = {
    "name": "Vocabulary",
    "fields": ["Word", "Reading", "Meaning", "Audio"],
    "templates": [{"name": "Recognition", "front": "front.html", "back": "back.html"}],
}


@dataclass(frozen=True)
class Example:
    path: Path
    line: int
    text: str
    excluded: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def examples() -> list[Example]:
    found = []
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            if FENCE.match(lines[i]):
                start = i
                i += 1
                body = []
                while i < len(lines) and not lines[i].startswith("```"):
                    body.append(lines[i])
                    i += 1
                before = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
                reason = EXCLUDED.match(before)
                found.append(Example(path, start + 1, "\n".join(body) + "\n", reason.group(1) if reason else None))
            i += 1
    return found


ALL = examples()

GENERATOR_FENCE = re.compile(r'^```python\n"""(diagrams/[a-z_]+\.py): .*?^```$', re.MULTILINE | re.DOTALL)
GENERATORS = {
    match.group(1): match.group(0).split("\n", 1)[1].rsplit("```", 1)[0]
    for path in DOCS
    for match in GENERATOR_FENCE.finditer(path.read_text(encoding="utf-8"))
}
"""The generator files the docs show (a fence opening with its path), placed in every example project."""


def test_the_docs_show_a_generator() -> None:
    assert "diagrams/schedules.py" in GENERATORS


def test_count_of_examples(capsys: pytest.CaptureFixture[str]) -> None:
    built = [e for e in ALL if e.excluded is None]
    excluded = [e for e in ALL if e.excluded is not None]
    with capsys.disabled():
        print(f"\ndocs examples: {len(ALL)} YAML fences, {len(built)} built, {len(excluded)} excluded")
        for example in excluded:
            print(f"  excluded {example.where}: {example.excluded}")
    assert len(built) >= 12  # README.md and docs/format.md hold at least these


@pytest.mark.parametrize("example", [e for e in ALL if e.excluded is None], ids=lambda e: e.where)
def test_example_builds(example: Example, tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / "cards").mkdir(parents=True)
    (project / "media").mkdir()
    for rel, source in GENERATORS.items():
        (project / rel).parent.mkdir(exist_ok=True)
        (project / rel).write_text(source, encoding="utf-8")
    deck = dict(BASE_DECK)
    cards: list[dict[str, Any]] = []
    card_file: dict[str, Any] | None = None
    data = yaml.safe_load(example.text if not example.text.startswith(" ") else textwrap.dedent(example.text))
    if isinstance(data, list):
        cards = data
    elif isinstance(data, dict) and "cards" in data:
        card_file = data
        cards = data["cards"]
    elif isinstance(data, dict) and ("namespace" in data or "variants" in data):
        deck.update(data)
        cards = DECK_CARDS  # for variants' filters to choose from
    elif isinstance(data, dict) and "templates" in data:
        _write_notetype(project, "example", data)
    elif isinstance(data, dict):  # keys of one card (a fragment shown indented under `- id: ...`)
        base = {"id": "example-card"}
        base.update(
            {"of": "stub-question"}
            if "formula" in data or "fact" in data
            else {"question": "Q?", "answer": "A.", "difficulty": "easy", "topics": ["example::topic"]}
        )
        cards = [{**base, **data}]
    else:
        pytest.fail(f"{example.where}: not a card, card file, deck.yaml or note type: {example.text!r}")
    defined = {card["id"] for card in cards}
    named = {"stub-question"} if any(card.get("of") == "stub-question" for card in cards) else set()
    for card in cards:
        named |= {*card.get("related", []), card.get("of"), card.get("duplicate_of")} - {None}
        for spec in (card.get("image"),):
            if isinstance(spec, dict) and "file" in spec:
                (project / "media" / spec["file"]).write_bytes(PICTURE)
        if card.get("notetype") and not (project / "notetypes" / card["notetype"]).exists():
            _write_notetype(project, card["notetype"], STUB_NOTETYPE)
        for value in (card.get("fields") or {}).values():
            for name in re.findall(r"\[sound:([^\]]+)\]", str(value.get("html", "") if isinstance(value, dict) else value)):
                (project / "media" / name).write_bytes(b"ID3" + bytes(32))
    stubs = [
        {"id": i, "question": f"Stub {i}?", "answer": "Stub.", "difficulty": "easy", "topics": ["stub::topic"]}
        for i in sorted(named - defined)
    ]
    (project / "deck.yaml").write_text(yaml.safe_dump(deck, allow_unicode=True, sort_keys=False), encoding="utf-8")
    main = card_file if card_file is not None else cards
    (project / "cards" / "example.yaml").write_text(yaml.safe_dump(main, allow_unicode=True, sort_keys=False), encoding="utf-8")
    if stubs or not cards:
        stubs = stubs or [
            {"id": "stub-question", "question": "Stub?", "answer": "Stub.", "difficulty": "easy", "topics": ["s::t"]}
        ]
        (project / "cards" / "stubs.yaml").write_text(yaml.safe_dump(stubs, sort_keys=False), encoding="utf-8")
    try:
        result = build(project)
    except ProjectInvalid as exc:
        problems = "\n".join(p.format() for p in exc.problems())
        pytest.fail(f"{example.where}: the example does not build:\n{problems}\n--- the example:\n{example.text}")
    assert result.path.is_file()
    warnings = [p.format() for p in result.plan.problems]
    assert not warnings, f"{example.where}: the example builds with warnings (check --strict fails):\n" + "\n".join(warnings)
    if isinstance(data, dict) and "variants" in data:
        assert len(result.variants) == len(data["variants"])  # every variant of the example was written


def _write_notetype(project: Path, key: str, spec: dict[str, Any]) -> None:
    folder = project / "notetypes" / key
    folder.mkdir(parents=True)
    spec = {k: v for k, v in spec.items() if k not in ("id", "field_ids", "template_ids")}  # ids: only adopt writes them
    (folder / "notetype.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    first = spec["fields"][0]
    for template in spec["templates"]:
        (folder / template["front"]).write_text(f"{{{{{first}}}}}\n", encoding="utf-8")
        (folder / template["back"]).write_text(
            f'{{{{FrontSide}}}}<hr id="answer">{{{{{spec["fields"][-1]}}}}}\n', encoding="utf-8"
        )
    if "css" in spec:
        (folder / spec["css"]).write_text(".card { font-size: 20px; }\n", encoding="utf-8")


def test_exclusions_say_why() -> None:
    for example in ALL:
        assert example.excluded is None or len(example.excluded) > 10, example.where
