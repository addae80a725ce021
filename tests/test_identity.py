"""Issue 18: every edit reaches the learner, and no edit silently re-identifies the deck.

Each test goes through what the user meets: the real `deckbuild` process, and the official
Anki backend importing the packages into a collection.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from ankiutil import answer_all, history, import_package, new_collection, notes_by_card_id
from conftest import write_tree
from images import png

from deckbuild.commands import build, release

REPO = Path(__file__).parent.parent
ENV = {**os.environ, "PYTHONPATH": str(REPO), "SOURCE_DATE_EPOCH": "1767225600"}
DAY = 86400
T0 = 1767225600

ONE, TWO, BEE = png(1), png(2), png(3)  # the picture's first and second bytes, and another picture
DECK = "name: Ident\nnamespace: ident\nversion: 1.0.0\n"


def _qa(card_id: str, question: str, extra: str = "") -> str:
    return (
        f"- id: {card_id}\n  question: {question}\n  answer: Answer of {card_id}.\n  difficulty: easy\n  topics: [t::s]\n{extra}"
    )


def _image(file: str) -> str:
    return f"  image: {{file: '{file}', alt: A figure.}}\n"


def _run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", *args, "-C", str(project)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _outputs(project: Path) -> dict[str, bytes]:
    """Every file the build writes (record, packages), by path."""
    files = [project / "deckbuild.lock", *sorted((project / "dist").glob("*"))]
    return {str(p.relative_to(project)): p.read_bytes() for p in files if p.is_file()}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    cards = (
        _qa("with-fig", "Which figure?", _image("fig.png")) + _qa("plain", "No figure?") + _qa("other", "Other?", _image("b.png"))
    )
    return write_tree(
        tmp_path / "deck",
        {"deck.yaml": DECK, "cards/a.yaml": cards, "media/fig.png": ONE, "media/b.png": BEE},
    )


def _media_bytes(col: object, name: str) -> bytes:
    return (Path(col.media.dir()) / name).read_bytes()  # type: ignore[attr-defined]


# -- 1. a changed hand-made image reaches the learner


def test_changed_image_reaches_the_learner(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0))
    first = build(project)
    v1 = tmp_path / "v1.apkg"
    shutil.copy(first.path, v1)
    col = new_collection(tmp_path / "anki")
    try:
        import_package(col, v1)
        assert 'src="fig.png"' in notes_by_card_id(col)["with-fig"]["Figure"]  # first shipped under its own name
        (project / "media" / "fig.png").write_bytes(TWO)
        monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0 + DAY))
        second = build(project)
        assert second.changed_notes == 1
        new_name = "fig-" + hashlib.sha256(TWO).hexdigest()[:12] + ".png"
        log = import_package(col, second.path)
        assert [n.fields[9] for n in log.updated] == ["with-fig"] and not log.new
        notes = notes_by_card_id(col)
        assert f'src="{new_name}"' in notes["with-fig"]["Figure"]
        assert _media_bytes(col, new_name) == TWO
        # The unchanged image keeps the name it shipped with; its note did not move.
        assert 'src="b.png"' in notes["other"]["Figure"] and _media_bytes(col, "b.png") == BEE
        # Putting the first bytes back is a change too, and reaches the learner again.
        (project / "media" / "fig.png").write_bytes(ONE)
        monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0 + 2 * DAY))
        third = build(project)
        assert third.changed_notes == 1
        log = import_package(col, third.path)
        assert [n.fields[9] for n in log.updated] == ["with-fig"]
        shown = notes_by_card_id(col)["with-fig"]["Figure"].split('src="')[1].split('"')[0]
        assert _media_bytes(col, shown) == ONE
    finally:
        col.close()


def test_unchanged_image_rebuild_changes_nothing(project: Path) -> None:
    build(project)
    before = _outputs(project)
    assert build(project).changed_notes == 0
    assert _outputs(project) == before


# -- 2. a changed namespace or deck name is refused unless said explicitly


@pytest.mark.parametrize(
    ("old", "new", "code"),
    [("namespace: ident", "namespace: ident-two", "E170"), ("name: Ident", "name: Ident Renamed", "E171")],
)
def test_identity_change_is_refused_and_nothing_written(project: Path, old: str, new: str, code: str) -> None:
    assert _run(project, "build", "-q").returncode == 0
    before = _outputs(project)
    config = project / "deck.yaml"
    config.write_text(config.read_text().replace(old, new))
    for command in ("check", "build"):
        result = _run(project, command)
        assert result.returncode == 1, result.stderr
        line = next(x for x in result.stderr.splitlines() if code in x)
        assert line.startswith(f"deck.yaml:{2 if code == 'E170' else 1}:"), line
        assert "Traceback" not in result.stderr
        assert _outputs(project) == before
    if code == "E170":
        assert "every note's GUID derives from it" in line and "--bump major --allow-identity-change" in line
    else:
        assert "the deck splits" in line and "--allow-identity-change" in line


def test_deck_rename_in_anki_and_the_explicit_path(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a deck rename does in the real backend, and the documented way through."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0))
    v1 = tmp_path / "v1.apkg"
    shutil.copy(build(project).path, v1)
    config = project / "deck.yaml"
    config.write_text(config.read_text().replace("name: Ident", "name: Ident Renamed"))
    with open(project / "cards" / "a.yaml", "a") as handle:
        handle.write(_qa("added", "Added later?"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0 + DAY))
    result = _run(project, "build", "-q", "--allow-identity-change")
    assert result.returncode == 0, result.stderr
    v2 = project / "dist" / "ident-renamed-1.0.0.apkg"  # the file is named after the deck
    assert "E171" not in _run(project, "check").stderr  # the record now holds the new name

    def decks_after(rename_first: bool) -> dict[str, str]:
        col = new_collection(tmp_path / f"anki-{rename_first}")
        try:
            import_package(col, v1)
            if rename_first:  # what the message and the changelog tell learners to do
                deck = col.decks.by_name("Ident")
                assert deck is not None
                col.decks.rename(deck, "Ident Renamed")
            import_package(col, v2)
            return {k: col.decks.name(n.cards()[0].did) for k, n in notes_by_card_id(col).items()}
        finally:
            col.close()

    # Anki matches decks by name: without the learner's rename, old cards stay behind.
    assert decks_after(False) == {"with-fig": "Ident", "plain": "Ident", "other": "Ident", "added": "Ident Renamed"}
    assert set(decks_after(True).values()) == {"Ident Renamed"}


def test_namespace_change_only_as_major_release(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0))
    release(project)
    config = project / "deck.yaml"
    config.write_text(config.read_text().replace("namespace: ident", "namespace: ident-two"))
    built = _run(project, "build", "--allow-identity-change")
    assert built.returncode == 1 and "E170" in built.stderr and "A namespace change ships only as a major release" in built.stderr
    minor = _run(project, "release", "--bump", "minor", "--allow-identity-change")
    assert minor.returncode == 1 and "E170" in minor.stderr
    major = _run(project, "release", "--bump", "major", "--allow-identity-change")
    assert major.returncode == 0, major.stderr
    assert "released 2.0.0" in major.stdout
    changelog = (project / "CHANGELOG.md").read_text()
    assert "**Breaking:** the deck's namespace changed from `ident` to `ident-two`" in changelog
    assert _run(project, "check").returncode == 0


# -- 3. previous_ids: a renamed card keeps its note and history


def test_previous_ids_rename_keeps_the_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = write_tree(
        tmp_path / "deck", {"deck.yaml": DECK, "cards/a.yaml": _qa("old-id", "What is renamed?") + _qa("keep", "Kept?")}
    )
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0))
    r1 = release(project)
    v1 = tmp_path / "v1.apkg"
    shutil.copy(r1.build.path, v1)
    col = new_collection(tmp_path / "anki")
    try:
        import_package(col, v1)
        answer_all(col)
        before = history(col)
        cards = project / "cards" / "a.yaml"
        cards.write_text(cards.read_text().replace("- id: old-id\n", "- id: new-id\n  previous_ids: [old-id]\n"))
        assert _run(project, "check").returncode == 0
        monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0 + DAY))
        r2 = release(project)
        assert r2.changes.summary() == "0 added, 0 changed, 1 renamed, 0 retired" and r2.version == "1.0.1"
        log = import_package(col, r2.build.path)
        assert not log.new and [n.fields[9] for n in log.updated] == ["new-id"]
        after = history(col)
        assert set(after) == {"new-id", "keep"}
        assert after["new-id"] == before["old-id"] and after["keep"] == before["keep"]
        assert len(col.find_notes("")) == 2
    finally:
        col.close()
    assert (
        "### Renamed\n\n- `old-id` → `new-id` — What is renamed? (same note: review history kept)"
        in (project / "CHANGELOG.md").read_text()
    )
    assert "### Retired" not in (project / "CHANGELOG.md").read_text().split("## 1.0.0")[0]
    diff = _run(project, "diff", "1.0.0", "1.0.1")
    assert diff.returncode == 0, diff.stderr
    assert "notes: 0 added, 0 changed, 1 renamed, 0 retired, 0 removed, 1 unchanged" in diff.stdout
    assert "  > old-id -> new-id — What is renamed? (renamed: same note, history kept)" in diff.stdout


def test_previous_ids_claimed_twice_or_live(project: Path) -> None:
    cards = project / "cards" / "b.yaml"
    cards.write_text(_qa("one", "One?", "  previous_ids: [gone]\n") + _qa("two", "Two?", "  previous_ids: [gone, plain]\n"))
    result = _run(project, "check")
    assert result.returncode == 1
    assert "cards/b.yaml:12:17: E126 card 'two': previous id 'gone' is also claimed by card 'one'" in result.stderr
    assert "E126 card 'two': previous id 'plain' is still the id of a card (at cards/a.yaml:" in result.stderr
    assert _run(project, "build").returncode == 1 and not (project / "dist").exists()


def test_release_warns_when_an_edit_looks_like_a_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = write_tree(
        tmp_path / "deck",
        {"deck.yaml": DECK, "cards/a.yaml": _qa("lr-warmup", "Why warm up the learning rate?") + _qa("k", "K?")},
    )
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0))
    release(project)
    cards = project / "cards" / "a.yaml"
    cards.write_text(cards.read_text().replace("lr-warmup", "warmup").replace("rate?", "rate ?"))
    result = _run(project, "check")
    assert result.returncode == 0
    assert "cards/a.yaml:1:7: E173 warning: card 'warmup' looks like a rename of 'lr-warmup' (released in 1.0.0" in result.stderr
    assert "add `previous_ids: [lr-warmup]`" in result.stderr
    out = _run(project, "release")
    assert "E173 warning" in out.stderr and out.returncode == 0


# -- 4. pipes, colliding or unportable names, kind changes


@pytest.mark.parametrize("where", ["cards/x.yaml", "media/unused.png", "media/fig.png", "deck.yaml"])
def test_named_pipe_is_refused_without_blocking(project: Path, where: str) -> None:
    assert _run(project, "build", "-q").returncode == 0  # then the up-to-date fingerprint is consulted too
    before = _outputs(project)
    (project / where).unlink(missing_ok=True)
    os.mkfifo(project / where)
    for command in ("check", "build"):
        result = _run(project, command)  # a blocked open would hit the subprocess timeout
        assert result.returncode == 1, result.stderr
        assert f"{where}: E125 " in result.stderr and "found a named pipe" in result.stderr, result.stderr
        assert _outputs(project) == before


@pytest.mark.parametrize(
    ("first", "second", "how"),
    [
        ("Fig.png", "fig.png", "only in upper/lower case"),
        (unicodedata.normalize("NFC", "café.png"), unicodedata.normalize("NFD", "café.png"), "only in Unicode normalization"),
    ],
)
def test_media_names_that_collide_elsewhere(tmp_path: Path, first: str, second: str, how: str) -> None:
    project = write_tree(
        tmp_path / "deck",
        {
            "deck.yaml": DECK,
            "cards/a.yaml": _qa("a", "A?", _image(first)) + _qa("b", "B?", _image(second)),
            f"media/{first}": ONE,
            f"media/{second}": TWO,
        },
    )
    if len(list((project / "media").iterdir())) < 2:
        pytest.skip("this file system itself folds the two names")
    result = _run(project, "build")
    assert result.returncode == 1 and not (project / "dist").exists()
    assert f"E123 card 'b': image name '{second}' differs from '{first}' (at cards/a.yaml:6:10) {how}" in result.stderr


@pytest.mark.parametrize(
    ("name", "why"),
    [("CON.png", "reserved device name"), ("a:b.png", "contains ':'"), ("q?.png", "contains '?'"), ("dot..png.", "ends with")],
)
def test_unportable_media_names(tmp_path: Path, name: str, why: str) -> None:
    project = write_tree(
        tmp_path / "deck", {"deck.yaml": DECK, "cards/a.yaml": _qa("a", "A?", _image(name)), f"media/{name}": ONE}
    )
    result = _run(project, "check")
    if name.endswith("."):
        assert "E113" in result.stderr  # its type is '.', refused before the name
        return
    assert result.returncode == 1 and f"E124 card 'a': image name '{name}'" in result.stderr and why in result.stderr


def test_kind_change_under_one_identity(project: Path) -> None:
    assert _run(project, "build", "-q").returncode == 0
    before = _outputs(project)
    cards = project / "cards" / "a.yaml"
    text = cards.read_text().replace(
        _qa("plain", "No figure?"), "- id: plain\n  fact: 'A {{c1::fact}}.'\n  difficulty: easy\n  topics: [t::s]\n"
    )
    cards.write_text(text)
    for command in ("check", "build"):
        result = _run(project, command)
        assert result.returncode == 1
        assert "E172 card 'plain' was shipped as a question/answer note and is now a cloze note" in result.stderr
        assert _outputs(project) == before
    # Through a previous id too.
    cards.write_text(text.replace("- id: plain\n", "- id: plain-fact\n  previous_ids: [plain]\n"))
    assert "E172 card 'plain-fact' (through previous id 'plain')" in _run(project, "check").stderr


def test_renamed_note_is_newer_than_the_old_one_even_with_an_old_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SOURCE_DATE_EPOCH pinned in CI: the renamed note must still be newer, or Anki skips it."""
    project = write_tree(tmp_path / "deck", {"deck.yaml": DECK, "cards/a.yaml": _qa("old-id", "Renamed?")})
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0))
    v1 = tmp_path / "v1.apkg"
    shutil.copy(build(project).path, v1)
    cards = project / "cards" / "a.yaml"
    cards.write_text(cards.read_text().replace("- id: old-id\n", "- id: new-id\n  previous_ids: [old-id]\n"))
    second = build(project)  # same clock
    col = new_collection(tmp_path / "anki")
    try:
        import_package(col, v1)
        log = import_package(col, second.path)
        assert [n.fields[9] for n in log.updated] == ["new-id"] and not log.new
    finally:
        col.close()


def test_namespace_change_is_caught_with_a_record_from_before_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh clone of a deck whose lock predates this check: the release's GUIDs tell."""
    import json

    project = write_tree(tmp_path / "deck", {"deck.yaml": DECK, "cards/a.yaml": _qa("a", "A?") + _qa("b", "B?")})
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0))
    release(project)
    lock = project / "deckbuild.lock"
    data = json.loads(lock.read_text())
    del data["identity"]
    lock.write_text(json.dumps(data))
    assert _run(project, "check").returncode == 0
    config = project / "deck.yaml"
    config.write_text(config.read_text().replace("namespace: ident", "namespace: other"))
    result = _run(project, "check")
    assert result.returncode == 1
    assert "E170 'namespace' changed from the one release 1.0.0 was built with to 'other'" in result.stderr


def test_previous_ids_cannot_move_a_card_that_shipped_as_its_own_note(project: Path) -> None:
    assert _run(project, "build", "-q").returncode == 0
    cards = project / "cards" / "a.yaml"
    cards.write_text(cards.read_text().replace("- id: plain\n", "- id: plain\n  previous_ids: [some-old-id]\n"))
    result = _run(project, "check")
    assert result.returncode == 1
    assert "E126 card 'plain' already shipped as a note of its own; previous_ids [some-old-id] would move it" in result.stderr
