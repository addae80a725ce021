"""The shipped deck draws its diagrams with the generators in the repository's diagrams/
folder: the same pictures as the last release, so learners get no update from the move."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import REPO

from deckbuild.diagrams.registry import project_registry, scan
from deckbuild.release.versioning import read_snapshot

_HASHED = re.compile(r"(?P<stem>.+)-(?P<hash>[0-9a-f]{12})\.png")


def _last_release() -> Path:
    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in path.name.removesuffix(".jsonl").split("."))

    return max((REPO / "releases").glob("*.jsonl"), key=version)


def test_a_build_after_the_move_ships_the_last_releases_media_and_changes_no_note(shipped_project: Path) -> None:
    """shipped_project is a copy of the repository's deck built cold, its cache empty."""
    released = read_snapshot(_last_release()).media
    (package,) = (shipped_project / "dist").glob("*.apkg")
    with zipfile.ZipFile(package) as z:
        names = json.loads(z.read("media"))
        files = {name: z.read(number) for number, name in names.items()}
    assert sorted(files) == sorted(released)
    drawn = {name: data for name, data in files.items() if _HASHED.fullmatch(name)}
    assert len(drawn) >= 40
    for name, data in drawn.items():  # a drawn file's name is the hash of its bytes
        assert hashlib.sha256(data).hexdigest()[:12] == _HASHED.fullmatch(name)["hash"], name  # type: ignore[index]
    # The record is the repository's, byte for byte: no note changed.
    assert (shipped_project / "deckbuild.lock").read_bytes() == (REPO / "deckbuild.lock").read_bytes()
    again = subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", "build", "--force", "-C", str(shipped_project)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode == 0, again.stderr
    assert "(0 notes changed" in again.stdout, again.stdout


def test_deckbuild_holds_no_generator_and_the_wheel_no_decks_diagrams(tmp_path: Path) -> None:
    package = REPO / "deckbuild" / "diagrams"
    assert scan(package, REPO).diagrams == {}  # the engine only
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("deckbuild-*.whl")
    shipped = project_registry(REPO).diagrams
    assert len(shipped) == 41
    with zipfile.ZipFile(wheel) as z:
        members = z.namelist()
        sources = {m: z.read(m).decode("utf-8") for m in members if m.endswith(".py")}
    assert "deckbuild/diagrams/registry.py" in members  # the engine ships
    assert "deckbuild/scaffold/template/diagrams/curves.py" in members  # and the new deck's example
    assert not [m for m in members if m.startswith(("diagrams/", "cards/", "media/", "releases/"))]
    declared = {m: [n for n in shipped if f'@diagram("{n}"' in text] for m, text in sources.items()}
    assert {m: names for m, names in declared.items() if names} == {}  # none of the shipped deck's generators
