"""Shared fixtures: throwaway deck projects and a real Anki collection."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

PROJECTS = Path(__file__).parent / "projects"
REPO = Path(__file__).parent.parent


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write a small file tree from {relative path: text or bytes} (text is dedented)."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
    return root


def copy_project(name: str, dest: Path) -> Path:
    """A private copy of tests/projects/<name> without build outputs."""
    target = dest / name
    shutil.copytree(PROJECTS / name, target, ignore=shutil.ignore_patterns("dist", ".deckbuild-cache", "deckbuild.lock"))
    return target


def cached_card_ords(project: Path) -> dict[str, str]:
    """The card ordinals a project's build cache keeps for its next build (apkg/package.py's memo)."""
    import sqlite3

    conn = sqlite3.connect(project / ".deckbuild-cache" / "cache.sqlite")
    try:
        return dict(conn.execute("SELECT key, value FROM ords"))
    finally:
        conn.close()


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    return copy_project("sample", tmp_path)


@pytest.fixture
def collection(tmp_path: Path) -> Iterator[object]:
    from ankiutil import new_collection

    col = new_collection(tmp_path / "anki")
    try:
        yield col
    finally:
        col.close()


@pytest.fixture(scope="session")
def shipped_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repo's own deck project, built once per test session."""
    from golden import copy_shipped

    from deckbuild.commands import build

    target = tmp_path_factory.mktemp("shipped") / "deck"
    target.mkdir()
    copy_shipped(target)
    build(target)
    return target


@pytest.fixture(scope="session")
def shipped_collection(shipped_project: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The shipped deck imported into a fresh official-Anki collection (read-only use)."""
    from ankiutil import import_package, new_collection

    from deckbuild.plan import plan

    package = plan(shipped_project, "check").package
    assert package is not None
    col = new_collection(tmp_path_factory.mktemp("anki-shipped"))
    import_package(col, package)
    try:
        yield col
    finally:
        col.close()


# Hypothesis: 200 examples per fuzz target in CI; HYPOTHESIS_PROFILE=long runs 10,000.
import os as _os  # noqa: E402

from hypothesis import settings as _hsettings  # noqa: E402

_hsettings.register_profile("ci", max_examples=200, deadline=None)
_hsettings.register_profile("long", max_examples=10_000, deadline=None)
_hsettings.load_profile(_os.environ.get("HYPOTHESIS_PROFILE", "ci"))
