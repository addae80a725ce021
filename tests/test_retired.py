"""Retired notes tell the learner: their front says they retired, why, and which card replaces
them (releases/retired.yaml), in real Anki after a plain import; bad entries are E435–E439."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from ankiutil import answer_all, history, import_package, notes_by_card_id, visible_text
from click.testing import CliRunner
from conftest import REPO, write_tree
from golden import snapshot

from deckbuild.cli import main
from deckbuild.commands import build, release
from deckbuild.release.retirement import INTERNAL_CODE, question_text
from deckbuild.release.versioning import read_snapshot

T0 = 1767225600  # 2026-01-01
DAY = 86400

CARDS = """\
- id: keep-qa
  question: What does a learning-rate warm-up protect against?
  answer: Large, badly aimed updates while the optimizer's statistics are still noise.
  difficulty: easy
  topics: [t::s]
- id: old-qa
  question: Old question about momentum?
  answer: Old answer.
  difficulty: easy
  topics: [t::s]
- id: keep-cloze
  fact: "Adam keeps {{c1::two}} moment estimates per weight."
  difficulty: easy
  topics: [t::s]
- id: old-cloze
  fact: "Old fact {{c1::one}} and {{c2::two}}."
  context: Old context (F48).
  difficulty: easy
  topics: [t::s]
"""

RETIRED = """\
old-qa:
  reason: It asked two things at once.
  replaced_by: keep-cloze
old-cloze:
  reason: Merged into a clearer card.
  replaced_by: keep-qa
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0))
    return write_tree(
        tmp_path / "deck",
        {"deck.yaml": "name: Ret\nnamespace: ret\nversion: 1.0.0\n", "cards/a.yaml": CARDS},
    )


def _retire_both(project: Path) -> None:
    path = project / "cards" / "a.yaml"
    text = path.read_text()
    text = text[: text.index("- id: old-qa")] + text[text.index("- id: keep-cloze") : text.index("- id: old-cloze")]
    path.write_text(text)


def test_a_learner_sees_the_retired_front_after_a_plain_import_history_kept(
    project: Path, collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = release(project)
    import_package(collection, first.build.path)
    answer_all(collection)
    before = history(collection)
    _retire_both(project)
    (project / "releases" / "retired.yaml").write_text(RETIRED)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0 + DAY))
    second = release(project)
    assert second.version == "2.0.0"
    # The release records the notes as they ship (push's baseline for a plain import).
    recorded = read_snapshot(project / "releases" / "2.0.0.jsonl").notes
    assert recorded["old-qa"].fields[0] == _package_notes(second.build.path)["old-qa"][0]
    assert "Retired card." in recorded["old-cloze"].fields[0]
    log = import_package(collection, second.build.path)
    assert sorted(n.fields[9] for n in log.updated) == ["old-cloze", "old-qa"] and not log.new
    assert history(collection) == before  # every card, its scheduling and its reviews stay
    notes = notes_by_card_id(collection)
    fronts = {}
    for card_id in ("old-qa", "old-cloze"):
        assert "retired" in notes[card_id].tags
        fronts[card_id] = [visible_text(card.question()) for card in notes[card_id].cards()]
    assert len(fronts["old-cloze"]) == 2  # both cloze cards are still there
    for text in fronts["old-qa"]:
        assert "Retired card. It asked two things at once." in text
        assert "Study instead: “Adam keeps [...] moment estimates per weight.”" in text
    for text in fronts["old-cloze"]:
        assert "Retired card. Merged into a clearer card." in text
        assert "Study instead: “What does a learning-rate warm-up protect against?”" in text
        assert "F48" not in text and "Old fact" not in text
    for text in fronts["old-qa"] + fronts["old-cloze"]:
        assert not re.search(r"keep-qa|keep-cloze|old-qa|old-cloze", text)  # named by question, not id
    # The next build ships the same notes: nothing changes on a second import.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0 + 2 * DAY))
    again = import_package(collection, build(project).path)
    assert not again.new and not again.updated


def test_a_renamed_id_defaults_to_its_new_card_as_the_replacement(project: Path) -> None:
    release(project)
    _retire_both(project)
    release(project)  # 2.0.0 retires old-qa and old-cloze
    # keep-qa is renamed and also claims the retired old-qa: its GUID follows keep-qa, and
    # old-qa, still retired, names it as its replacement without an entry of its own.
    path = project / "cards" / "a.yaml"
    path.write_text(path.read_text().replace("- id: keep-qa\n", "- id: warm-up\n  previous_ids: [keep-qa, old-qa]\n", 1))
    (project / "releases" / "retired.yaml").write_text("old-cloze:\n  reason: Merged into a clearer card.\n")
    notes = {k: [visible_text(f) for f in v] for k, v in _package_notes(build(project).path).items()}
    assert "Retired card. Merged into a clearer card." in notes["old-cloze"][0]
    assert "Study instead" not in notes["old-cloze"][0]
    assert "Retired card. This card is no longer part of the deck." in notes["old-qa"][0]
    assert "Study instead: “What does a learning-rate warm-up protect against?”" in notes["old-qa"][0]


def _package_notes(path: Path) -> dict[str, list[str]]:
    return {n["fields"][9]: n["fields"] for n in snapshot(path)["notes"]}


BAD = [
    ("old-qa:\n  reason: x\n  replaced_bye: keep-qa\n", "E435", 3, 3, "did you mean 'replaced_by'?"),
    ("- old-qa\n", "E435", 1, 1, "expected a mapping"),
    ("old-qa:\n  reason: Merged.\n  replaced_by: keep-qq\n", "E436", 3, 16, "did you mean 'keep-qa'?"),
    ("old-qa:\n  reason: Merged.\n  replaced_by: old-cloze\n", "E436", 3, 16, "a retired card"),
    ("keep-qa:\n  reason: Merged.\n", "E437", 1, 1, "a live card of the deck"),
    ("nowhere:\n  reason: Merged.\n", "E437", 1, 1, "an id no release shipped"),
    ("old-qa:\n  replaced_by: keep-qa\n", "E438", 2, 3, "a reason: in words"),
    ("old-qa:\n  reason: '  '\n", "E438", 2, 11, "a reason: in words"),
    ("old-qa:\n  reason: See E123.\n", "E439", 2, 11, "the internal code 'E123'"),
    ("old-qa:\n  reason: Use keep-qa now.\n", "E439", 2, 11, "the internal code 'keep-qa'"),
]


@pytest.mark.parametrize(("text", "code", "line", "col", "words"), BAD, ids=[f"{b[1]}-{i}" for i, b in enumerate(BAD)])
def test_bad_retired_entries_are_located_and_change_no_file(
    project: Path, text: str, code: str, line: int, col: int, words: str
) -> None:
    release(project)
    _retire_both(project)
    release(project)
    package = build(project).path
    before = package.read_bytes()
    lock = (project / "deckbuild.lock").read_bytes()
    (project / "releases" / "retired.yaml").write_text(text)
    out = CliRunner().invoke(main, ["build", "-C", str(project)])
    assert out.exit_code != 0
    assert f"releases/retired.yaml:{line}:{col}: {code} " in out.output, out.output
    assert words in out.output and "Traceback" not in out.output
    assert package.read_bytes() == before and (project / "deckbuild.lock").read_bytes() == lock
    checked = CliRunner().invoke(main, ["check", "-C", str(project)])  # check finds it too
    assert checked.exit_code != 0 and f"releases/retired.yaml:{line}:{col}: {code} " in checked.output, checked.output


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The shipped deck's notes as its package holds them, built from a private copy."""
    work = tmp_path_factory.mktemp("shipped") / "deck"
    work.mkdir()
    for name in ("deck.yaml", "deckbuild.lock", "CHANGELOG.md"):
        shutil.copyfile(REPO / name, work / name)
    for name in ("cards", "media", "diagrams", "releases", ".deckbuild-cache"):
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, work / name, ignore=shutil.ignore_patterns("*.lock"))
    notes = snapshot(build(work).path)["notes"]
    return {n["fields"][9]: [*n["fields"], " ".join(n["tags"])] for n in notes}


def test_every_retired_note_of_the_shipped_deck_names_its_replacement(shipped: dict[str, list[str]]) -> None:
    retired = {k: f for k, f in shipped.items() if "retired" in f[-1].split()}
    assert len(retired) >= 13
    live = {question_text(f[:-1], "{{c" in f[0]) for k, f in shipped.items() if k not in retired}
    for card_id, fields in retired.items():
        front = visible_text(fields[0])
        assert front.startswith("Retired card. "), card_id
        named = re.search(r"Study instead: “(.+?)”", front)
        assert named, f"{card_id}: names no replacement"
        assert named.group(1) in live, f"{card_id}: '{named.group(1)}' is no live card's question"
        assert fields[1] == "", f"{card_id}: its old context still shows"


# The fields a learner reads (CardId is the note's hidden key, shown by no template).
SHOWN = ("Text/Question", "Context/Answer", "Details", "Figure", "Difficulty", "Topics", "Related", "Notice", "My notes")
SHOWN_INDEXES = (0, 1, 2, 3, 4, 5, 7, 8, 10)


def test_no_field_a_learner_reads_holds_an_internal_code(shipped: dict[str, list[str]]) -> None:
    ids = set(shipped)
    problems = []
    for card_id, fields in shipped.items():
        for name, index in zip(SHOWN, SHOWN_INDEXES, strict=True):
            text = visible_text(fields[index])  # attributes (a figure's hashed file name) are not read
            found = [m.group() for m in INTERNAL_CODE.finditer(text)]
            found += [w for w in re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)+", text) if w in ids]
            problems += [f"{card_id} {name}: {code}" for code in found]
    assert not problems, "\n".join(problems)


def test_the_internal_code_pattern_finds_each_kind() -> None:
    for code in ("E435", "(F48)", "q040", "attn-q03", "deep-learning-120 · q040", "0123456789abcdef"):
        assert INTERNAL_CODE.search(code), code
    for fine in ("ResNet-110", "Q3 results", "f(x) = 2x", "E = mc²", "fp32"):
        assert not INTERNAL_CODE.search(fine), fine


def test_the_example_of_docs_format_builds(project: Path) -> None:
    """docs/format.md's releases/retired.yaml, in a project where its ids exist."""
    text = (REPO / "docs" / "format.md").read_text(encoding="utf-8")
    start = text.index("```yaml\n", text.index("### Retired cards")) + len("```yaml\n")
    example = text[start : text.index("```", start)]
    path = project / "cards" / "a.yaml"
    path.write_text(
        path.read_text()
        .replace("- id: keep-qa\n", "- id: lr-warmup-cosine\n")
        .replace("- id: old-qa\n", "- id: warmup-cosine-old\n")
    )
    release(project)
    text = path.read_text()
    path.write_text(text[: text.index("- id: warmup-cosine-old")] + text[text.index("- id: keep-cloze") :])
    (project / "releases" / "retired.yaml").write_text(example)
    # Written before the release that retires the card: that release's package shows it.
    front = visible_text(_package_notes(release(project).build.path)["warmup-cosine-old"][0])
    assert front.startswith("Retired card. It asked two things at once; each now has its own card.")
    assert "Study instead: “What does a learning-rate warm-up protect against?”" in front
