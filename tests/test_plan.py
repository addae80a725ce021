"""plan() computes everything and writes no project file; apply() writes exactly the plan's outputs."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_tree

from deckbuild.apply import apply
from deckbuild.errors import BuildBusy
from deckbuild.plan import plan
from deckbuild.plan_result import changeset


def _files(root: Path) -> dict[str, bytes]:
    """Every file of the project but the cache."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".deckbuild-cache" not in p.relative_to(root).parts
    }


def _card(card_id: str, answer: str, extra: str = "") -> str:
    return f"- id: {card_id}\n  question: Question {card_id}?\n  answer: {answer}\n  difficulty: hard\n  topics: [t::s, a::b]\n{extra}"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    return write_tree(
        tmp_path / "deck",
        {
            "deck.yaml": "name: Plan\nnamespace: plan\nversion: 1.0.0\n",
            "cards/a.yaml": _card("c1", "One.", "  tags: [kind::scenario]\n")
            + _card("c2", "Two.")
            + "- id: f1\n  fact: 'One plus one is {{c1::two}}, written {{c2::2}}.'\n  context: Numbers.\n  of: c2\n",
        },
    )


def test_a_release_plan_writes_nothing_and_apply_writes_exactly_its_outputs(project: Path) -> None:
    before = _files(project)
    planned = plan(project, "release")
    assert _files(project) == before, "planning wrote a project file"
    assert planned.release is not None and planned.release.version == "1.0.0"
    names = [o.path.relative_to(project).as_posix() for o in planned.outputs]
    # The crash-safe order: the release's files, then the record, then the package.
    assert names == [
        "releases/1.0.0.jsonl",
        "deck.yaml",
        "CHANGELOG.md",
        "deckbuild.lock",
        "dist/plan-1.0.0.apkg",
    ]
    applied = apply(planned)
    after = _files(project)
    assert {p.relative_to(project).as_posix() for p in applied.written} == set(names) - {"deck.yaml"}  # version unchanged
    for output in planned.outputs:
        assert after[output.path.relative_to(project).as_posix()] == output.data
    assert {k for k in after if after[k] != before.get(k)} == set(names) - {"deck.yaml"}


def test_check_plans_every_problem_and_stops(project: Path) -> None:
    (project / "cards" / "b.yaml").write_text(
        _card("c1", "Duplicate id.") + _card("c3", "") + _card("c4", "Four.", "  related: [nope]\n")
    )
    planned = plan(project, "check")
    assert [(str(p.location), p.code) for p in planned.problems] == [
        ("cards/b.yaml:1:7", "E108"),
        ("cards/b.yaml:8:10", "E107"),
        ("cards/b.yaml:16:12", "E110"),
    ]
    assert planned.outputs == () and planned.notes == () and planned.summary is None
    assert planned.package == project / "dist" / "plan-1.0.0.apkg"
    assert not (project / ".deckbuild-cache").exists(), "check wrote the cache"


def test_up_to_date_is_decided_by_the_plan(project: Path) -> None:
    apply(plan(project, "build"))
    again = plan(project, "build", force=False)
    assert again.up_to_date and again.outputs == () and again.config is None
    assert again.package == project / "dist" / "plan-1.0.0.apkg"
    (project / "cards" / "a.yaml").write_text((project / "cards" / "a.yaml").read_text().replace("One.", "One!"))
    edited = plan(project, "build", force=False)
    assert not edited.up_to_date and [n.card_id for n in changeset(edited).notes] == ["c1"]


def test_apply_refuses_a_record_changed_since_the_plan(project: Path) -> None:
    apply(plan(project, "build"))
    (project / "cards" / "a.yaml").write_text((project / "cards" / "a.yaml").read_text().replace("One.", "One!"))
    planned = plan(project, "build")
    (project / "deckbuild.lock").write_bytes((project / "deckbuild.lock").read_bytes() + b"\n")  # another writer
    before = _files(project)
    with pytest.raises(BuildBusy, match="deckbuild.lock changed while this one was working"):
        apply(planned)
    assert _files(project) == before


def test_facets_come_from_the_plan(project: Path) -> None:
    planned = plan(project, "build")
    c1, c2, f1 = (planned.facets[key] for key in ("c1", "c2", "f1"))
    assert (c1.kind, c1.difficulty, c1.topics) == ("scenario", "hard", ("a::b", "t::s"))
    assert (c2.kind, f1.kind) == ("qa", "fact")
    assert (f1.difficulty, f1.topics) == ("hard", ("a::b", "t::s"))  # inherited from c2
    assert f1.location is not None and f1.location.path == "cards/a.yaml"
    assert planned.summary is not None and planned.summary.cards == 4  # 2 questions + 2 deletions


def test_an_import_plan_into_a_new_folder(tmp_path: Path) -> None:
    """plan() computes the card files without creating anything; apply() makes the folder and writes them all."""
    seed = Path(__file__).resolve().parent.parent / "seeds" / "training-dynamics-43.txt"
    root = tmp_path / "new-deck"
    planned = plan(root, "import", seeds=[seed])
    assert not root.exists()
    assert planned.imported is not None and len(planned.imported.added) == 43
    applied = apply(planned)
    assert [p.relative_to(root).as_posix() for p in applied.written] == ["cards/uncategorized.yaml"]
    assert (root / "cards" / "uncategorized.yaml").read_bytes() == planned.outputs[0].data
