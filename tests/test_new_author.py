"""A new author's first steps: the deck `new` writes passes every check, its release workflow
installs deckbuild, commands find the project (or say how to make one), typos get one error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from deckbuild.scaffold.new import deckbuild_requirement

REPO = Path(__file__).resolve().parent.parent


def deckbuild(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "deckbuild.cli", *args], cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def new_deck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("author") / "my-deck"
    made = deckbuild("new", str(root), "--name", "My Deck")
    assert made.returncode == 0, made.stderr
    return root


def test_the_new_deck_passes_strict_check_and_phone_fit(new_deck: Path, tmp_path: Path) -> None:
    project = tmp_path / "d"
    shutil.copytree(new_deck, project)
    strict = deckbuild("check", "--strict", cwd=project)
    assert strict.returncode == 0, strict.stderr
    assert strict.stderr.strip().splitlines()[-1] == "0 error(s), 0 warning(s)"
    fit = deckbuild("preview", "--check-fit", cwd=project)
    assert fit.returncode == 0, fit.stdout + fit.stderr
    assert "E190" not in fit.stderr
    assert "cards fit a 360-px screen" in fit.stdout


# -- where the project is --------------------------------------------------------------------


def test_C_works_before_and_after_the_command_name_but_not_twice(new_deck: Path, tmp_path: Path) -> None:
    before = deckbuild("-C", str(new_deck), "check", cwd=tmp_path)
    after = deckbuild("check", "-C", str(new_deck), cwd=tmp_path)
    assert before.returncode == after.returncode == 0, before.stderr + after.stderr
    assert before.stderr == after.stderr
    twice = deckbuild("-C", str(new_deck), "check", "-C", str(new_deck), cwd=tmp_path)
    assert twice.returncode == 2
    assert "-C given twice" in twice.stderr


def test_a_command_in_a_subfolder_finds_its_project(new_deck: Path) -> None:
    found = deckbuild("check", cwd=new_deck / "cards")
    assert found.returncode == 0, found.stderr
    assert found.stderr.splitlines()[0] == f"using the deck project in {new_deck}"
    assert found.stderr.count("using the deck project") == 1


@pytest.mark.parametrize("command", [["check"], ["build"], ["preview"], ["release"], ["status", "--collection", "c.anki2"]])
def test_outside_a_project_one_error_names_new_and_C(command: list[str], tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / ".git").mkdir()  # a git root: the search stops here, whatever lies above
    result = deckbuild(*command, cwd=empty)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "E150" in lines[0] and "E119" not in result.stderr
    assert "deckbuild new DIR" in lines[0] and "-C DIR" in lines[0]
    assert list(empty.iterdir()) == [empty / ".git"]  # nothing written


def test_serve_outside_a_project_exits_1_and_does_not_listen(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / ".git").mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", "serve", "--port", "0"],
        cwd=empty,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "E150" in result.stderr and "serving" not in result.stderr


def test_new_and_import_never_search(new_deck: Path) -> None:
    inner = new_deck / "cards" / "sub"
    made = deckbuild("new", str(inner), cwd=new_deck / "cards")
    try:
        assert made.returncode == 0, made.stderr
        assert "using the deck project" not in made.stderr
    finally:
        shutil.rmtree(inner, ignore_errors=True)


# -- typos give one true error ----------------------------------------------------------------


def _with(new_deck: Path, tmp_path: Path, old: str, new: str) -> Path:
    project = tmp_path / "d"
    shutil.copytree(new_deck, project)
    cards = project / "cards" / "examples.yaml"
    text = cards.read_text()
    assert old in text
    cards.write_text(text.replace(old, new, 1))
    return project


def _errors(project: Path) -> list[str]:
    result = deckbuild("check", cwd=project)
    assert result.returncode == 1
    return result.stderr.strip().splitlines()[:-1]


def test_a_misspelt_key_gets_did_you_mean_and_no_false_errors(new_deck: Path, tmp_path: Path) -> None:
    project = _with(new_deck, tmp_path, "  answer: A parabola", "  answr: A parabola")
    errors = _errors(project)
    assert len(errors) == 1, errors
    assert "E104 unknown key 'answr'; did you mean 'answer'?" in errors[0]


def test_an_invalid_value_is_one_error_and_references_to_its_card_hold(new_deck: Path, tmp_path: Path) -> None:
    project = _with(new_deck, tmp_path, "difficulty: easy", "difficulty: eazy")
    errors = _errors(project)
    assert len(errors) == 1, errors
    assert "E107" in errors[0] and "eazy" in errors[0]


def test_a_reference_to_a_card_that_does_not_exist_is_still_reported(new_deck: Path, tmp_path: Path) -> None:
    project = _with(new_deck, tmp_path, "  of: what-is-a-parabola\n", "  of: what-is-a-parabol\n")
    errors = _errors(project)
    assert len(errors) == 1 and "E110" in errors[0] and "'what-is-a-parabol'" in errors[0], errors


def test_a_misspelt_deck_yaml_key_gets_did_you_mean(new_deck: Path, tmp_path: Path) -> None:
    project = tmp_path / "d"
    shutil.copytree(new_deck, project)
    config = project / "deck.yaml"
    config.write_text(config.read_text().replace("version:", "versoin:", 1))
    errors = _errors(project)
    assert len(errors) == 1, errors
    assert "E104 unknown key 'versoin'; did you mean 'version'?" in errors[0]


def test_an_unquoted_cloze_value_gets_a_hint_to_quote_it(new_deck: Path, tmp_path: Path) -> None:
    project = _with(
        new_deck,
        tmp_path,
        "fact: 'A quadratic with a negative discriminant has {{c1::no real}} roots.'",
        "fact: {{c1::A}} quadratic with a negative discriminant has {{c2::no real}} roots.",
    )
    errors = _errors(project)
    assert len(errors) == 1, errors
    assert "E106" in errors[0] and "quote the whole value" in errors[0]


# -- a successful build shows its warnings ----------------------------------------------------


def test_build_prints_the_warnings_check_finds(new_deck: Path, tmp_path: Path) -> None:
    project = _with(new_deck, tmp_path, "  context: The discriminant \\( b^2 - 4ac \\).\n", "")
    check = deckbuild("check", cwd=project)
    warnings = [line for line in check.stderr.splitlines() if "warning:" in line]
    assert warnings and all("E416" in line for line in warnings), check.stderr
    built = deckbuild("build", cwd=project)
    assert built.returncode == 0, built.stderr
    assert [line for line in built.stderr.splitlines() if "warning:" in line] == warnings
    assert f"{len(warnings)} warning(s)" in built.stderr
    quiet = deckbuild("build", "--force", "-q", cwd=project)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == ""


# -- the release workflow's install line ------------------------------------------------------


def test_requirement_line_follows_where_deckbuild_came_from() -> None:
    assert deckbuild_requirement("") == ("deckbuild==0.1.0", None)
    git = json.dumps({"url": "https://example.org/deckbuild.git", "vcs_info": {"vcs": "git", "commit_id": "ab12"}})
    assert deckbuild_requirement(git) == ("deckbuild @ git+https://example.org/deckbuild.git@ab12", None)
    local_git = json.dumps({"url": "file:///srv/deckbuild", "vcs_info": {"vcs": "git", "commit_id": "ab12"}})
    line, warning = deckbuild_requirement(local_git)
    assert line == "deckbuild @ git+file://localhost/srv/deckbuild@ab12" and warning is not None
    line, warning = deckbuild_requirement(json.dumps({"url": "file:///home/me/deckbuild", "dir_info": {"editable": True}}))
    assert line.startswith("# deckbuild @ git+")
    assert warning is not None and "/home/me/deckbuild" in warning and "docs/publishing.md" in warning


def _venv(where: Path) -> Path:
    """A fresh venv whose libraries (pip, setuptools and deckbuild's, not deckbuild) are the ones this
    test runs with, so nothing downloads."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    ours = sysconfig.get_paths()["purelib"]
    (next(where.glob("lib/python*/site-packages")) / "libraries-of-the-tests.pth").write_text(ours + "\n")
    return where / "bin"


def test_the_generated_install_line_installs_deckbuild_from_a_git_url(tmp_path: Path) -> None:
    source = tmp_path / "deckbuild-src"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(source)], check=True)
    commit = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_"))}
    pip = ["-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--disable-pip-version-check"]

    author = _venv(tmp_path / "author")
    url = f"git+file://localhost{source}@{commit}"
    subprocess.run([author / "python", *pip, f"deckbuild @ {url}"], check=True, env=env, cwd=tmp_path)
    made = subprocess.run(
        [author / "deckbuild", "new", "deck"], capture_output=True, text=True, env=env, cwd=tmp_path, check=False
    )
    assert made.returncode == 0, made.stderr
    assert "cannot reach" in made.stderr  # a file:// URL: the author is told to publish it
    lines = [line for line in (tmp_path / "deck" / "requirements.txt").read_text().splitlines() if not line.startswith("#")]
    assert lines[0] == f"deckbuild @ {url}"

    runner = _venv(tmp_path / "runner")  # the release workflow's install step, as CI runs it
    subprocess.run([runner / "python", *pip, lines[0]], check=True, env=env, cwd=tmp_path)
    version = subprocess.run([runner / "deckbuild", "--version"], capture_output=True, text=True, env=env, check=False)
    assert version.returncode == 0 and "0.1.0" in version.stdout
    check = subprocess.run(
        [runner / "deckbuild", "check", "--strict"], capture_output=True, text=True, env=env, cwd=tmp_path / "deck", check=False
    )
    assert check.returncode == 0, check.stderr


# -- adopted decks in other scripts get readable ids ------------------------------------------


def test_adopt_transliterates_cyrillic_and_hebrew_into_readable_unique_ids(tmp_path: Path) -> None:
    from anki.collection import ExportAnkiPackageOptions
    from anki.import_export_pb2 import ExportLimit
    from ankiutil import new_collection

    col = new_collection(tmp_path / "anki")
    try:
        deck = col.decks.id("География::Столицы")
        for front, back in [("Москва", "столица России"), ("Москва", "город"), ("ירושלים", "בירת ישראל"), ("Paris", "France")]:
            note = col.new_note(col.models.by_name("Basic"))
            note["Front"], note["Back"] = front, back
            col.add_note(note, deck)
        package = tmp_path / "geo.apkg"
        col.export_anki_package(
            out_path=str(package),
            options=ExportAnkiPackageOptions(with_scheduling=False, with_media=True, legacy=False),
            limit=ExportLimit(deck_id=col.decks.id_for_name("География")),
        )
    finally:
        col.close()
    adopted = deckbuild("adopt", str(package), str(tmp_path / "geo"))
    assert adopted.returncode == 0, adopted.stderr
    (card_file,) = (tmp_path / "geo" / "cards").iterdir()
    text = card_file.read_text()
    ids = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.strip().startswith("- id:")]
    assert sorted(ids) == ["moskva", "moskva-2", "paris", "yrvslym"]
    assert deckbuild("check", "--strict", cwd=tmp_path / "geo").returncode == 0


def test_adopt_keeps_script_and_remote_loads_as_sanitized_html_as_docs_say(tmp_path: Path) -> None:
    from anki.collection import ExportAnkiPackageOptions
    from anki.import_export_pb2 import ExportLimit
    from ankiutil import new_collection

    col = new_collection(tmp_path / "anki")
    try:
        deck = col.decks.id("Hostile")
        backs = [
            '<script src="https://evil.example/x.js"></script>kept text',
            'a protocol-relative load <img src="//example.org/x.png">',
            '<script>document.write("<img src=x.png>")</script>only script names x.png',
        ]
        for n, back in enumerate(backs):
            note = col.new_note(col.models.by_name("Basic"))
            note["Front"], note["Back"] = f"front {n}", back
            col.add_note(note, deck)
        package = tmp_path / "script.apkg"
        col.export_anki_package(
            out_path=str(package),
            options=ExportAnkiPackageOptions(with_scheduling=False, with_media=True, legacy=False),
            limit=ExportLimit(deck_id=deck),
        )
    finally:
        col.close()
    adopted = deckbuild("adopt", str(package), str(tmp_path / "p"))
    assert adopted.returncode == 0, adopted.stderr
    assert "E260 warning" in adopted.stderr and "error" not in adopted.stderr
    built = deckbuild("build", cwd=tmp_path / "p")
    assert built.returncode == 0, built.stderr
    import sqlite3
    import zipfile

    (apkg,) = (tmp_path / "p" / "dist").glob("*.apkg")
    with zipfile.ZipFile(apkg) as archive:
        (tmp_path / "c.anki2").write_bytes(archive.read("collection.anki2"))
    db = sqlite3.connect(tmp_path / "c.anki2")
    fields = " ".join(row[0] for row in db.execute("select flds from notes"))
    db.close()
    assert "kept text" in fields and "<script" not in fields and "//example.org" not in fields and "evil" not in fields
