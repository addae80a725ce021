"""`deckbuild preview`: a self-contained, deterministic static site of every card as Anki renders it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from previewsite import index_entries

from deckbuild.cli import main
from deckbuild.preview.site import PreviewError, write_preview


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_site_holds_every_card_its_media_and_mathjax(sample: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    result = write_preview(sample, out)
    assert result.index == out / "index.html" and result.cards == 9 and result.media == 2
    assert sorted(p.name for p in (out / "cards").iterdir()) == [
        "clipping-picture.html",
        "dropout-fact.c1.html",
        "dropout-fact.c2.html",
        "escaping.html",
        "figure-card.html",
        "math-answer.html",
        "softmax-formula.c1.html",
        "softmax-formula.c2.html",
        "twin-question.html",
    ]
    assert (out / "media" / "axes.png").read_bytes() == (sample / "media" / "axes.png").read_bytes()
    assert (out / "mathjax" / "tex-svg.js").stat().st_size > 1_000_000
    assert (out / "mathjax" / "input" / "tex" / "extensions" / "mhchem.js").exists()
    page = (out / "cards" / "math-answer.html").read_text(encoding="utf-8")
    # Anki's rendering: the note type's CSS and the filled-in template, on both sides.
    assert page.count("<style>") == 2 and "db-question" in page and "db-answer" in page
    assert r"\( \sigma(z)_i = \frac{e^{z_i}}{\sum_j e^{z_j}} \)" in page
    index = (out / "index.html").read_text(encoding="utf-8")
    assert index_entries(out).count('<li data-difficulty="') == 9
    assert '<option value="normalization::batchnorm">' in index


def test_nothing_is_loaded_from_the_network(sample: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    write_preview(sample, out)
    for path in [
        out / "index.html",
        *sorted((out / "index").iterdir()),
        *sorted((out / "cards").iterdir()),
        out / "assets" / "preview.css",
    ]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"""(src|href)=["']?(https?:)?//|url\(\s*["']?(https?:)?//|@import""", text), path


def test_same_deck_same_bytes(sample: Path, tmp_path: Path) -> None:
    write_preview(sample, tmp_path / "a")
    write_preview(sample, tmp_path / "b")
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")


def test_replaces_its_own_output_but_never_another_folder(sample: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    write_preview(sample, out)
    (out / "cards" / "stale.html").write_text("old", encoding="utf-8")
    write_preview(sample, out)
    assert not (out / "cards" / "stale.html").exists()
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(PreviewError, match="not a deckbuild preview"):
        write_preview(sample, other)
    assert (other / "notes.txt").read_text(encoding="utf-8") == "keep me"


def test_cli_writes_to_the_output_folder_by_default(sample: Path) -> None:
    result = CliRunner().invoke(main, ["preview", "-C", str(sample)])
    assert result.exit_code == 0, result.output
    assert "9 cards, 2 media files" in result.output
    assert (sample / "dist" / "preview" / "index.html").exists()


def test_cli_reports_source_errors_without_a_traceback(sample: Path) -> None:
    (sample / "cards" / "basics.yaml").write_text("- id: broken\n  question: no answer\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["preview", "-C", str(sample)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output and "basics.yaml" in result.output
    assert not (sample / "dist" / "preview").exists()


def test_a_build_syncs_every_file_it_writes_and_the_site_only_what_it_cannot_make_again(
    sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project's files reach the disk before they replace their targets; the site's pages and
    media (made again from the sources whenever lost) are renamed into place without waiting for
    it.  Every file gets the mode open() would give it under the process's umask, which no write
    sets (reading it means setting it: a file another thread made meanwhile would get none)."""
    import os

    from deckbuild.commands import build

    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    umask = os.umask(0o022)
    os.umask(umask)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "umask", lambda mask: pytest.fail(f"umask({mask:o}) while writing"))
    built = build(sample)
    names = [Path(p).name for p in synced]
    for target in (sample / "deckbuild.lock", built.path):  # each as its temp file, .<name>.<random>.tmp
        assert any(name.startswith(f".{target.name}.") and name.endswith(".tmp") for name in names), names
    synced.clear()
    out = tmp_path / "site"
    result = write_preview(sample, out)
    pages = [*(out / "cards").iterdir(), *(out / "media").iterdir()]
    assert result.cards == 9 and len(pages) == 11
    assert not [p for p in synced if str(out) in p and ("/cards/" in p or "/media/" in p)], synced
    assert len(synced) < len(pages), synced  # the marker and the manifest at most
    assert not [p for p in out.rglob("*") if p.name.endswith((".tmp", ".old"))]
    for path in [*pages, built.path, sample / "deckbuild.lock"]:
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask, path


def test_a_page_or_a_lone_file_whose_rename_fails_keeps_its_old_bytes_and_nothing_beside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A site's page, and one file replaced without a journal, keep no backup: os.replace fails
    whole, so there is nothing to put back, and the temp file goes.  With a project (a journal,
    which a kill leaves for recovery to put the old bytes back from their backup), one file
    keeps its backup."""
    import errno
    import os

    from deckbuild.errors import WriteFailed
    from deckbuild.writer import StagedWrites, atomic_write_bytes, replace_page

    site = tmp_path / "site"
    site.mkdir()
    page, other = site / "page.html", site / "other.txt"
    page.write_bytes(b"old")
    linked: list[str] = []
    real_link = os.link
    monkeypatch.setattr(os, "link", lambda a, b: linked.append(Path(b).name) or real_link(a, b))
    replace_page(page, b"new" * 100_000)
    atomic_write_bytes(other, b"other")
    replace_page(site / "empty.html", b"")
    assert page.read_bytes() == b"new" * 100_000 and other.read_bytes() == b"other" and linked == []
    assert sorted(p.name for p in site.iterdir()) == ["empty.html", "other.txt", "page.html"]

    project = tmp_path / "project"
    project.mkdir()
    (project / "deckbuild.lock").write_bytes(b"old")
    with StagedWrites(root=project, command="build") as writes:
        writes.stage(project / "deckbuild.lock", b"new")
        writes.commit()
    assert (project / "deckbuild.lock").read_bytes() == b"new"
    assert len(linked) == 1 and linked[0].startswith(".deckbuild.lock.") and linked[0].endswith(".old"), linked

    def refuse(src: str, dst: str) -> None:
        raise PermissionError(1, "Operation not permitted", dst)

    real_replace = os.replace

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    real_write = os.write
    monkeypatch.setattr(os, "write", full)
    with pytest.raises(WriteFailed) as full:  # as a project's file: E167, free disk space
        replace_page(page, b"newer")
    assert [p.code for p in full.value.problems()] == ["E167"] and "free disk space" in str(full.value)
    monkeypatch.setattr(os, "write", real_write)
    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(WriteFailed, match="page.html") as refused:
        replace_page(page, b"newer")
    assert [p.code for p in refused.value.problems()] == ["E162"]
    (site / "folder.html").mkdir()
    monkeypatch.setattr(os, "replace", real_replace)
    with pytest.raises(WriteFailed) as in_the_way:
        replace_page(site / "folder.html", b"page")
    assert [p.code for p in in_the_way.value.problems()] == ["E166"]
    (site / "folder.html").rmdir()
    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(WriteFailed):
        atomic_write_bytes(other, b"newer")
    assert page.read_bytes() == b"new" * 100_000 and other.read_bytes() == b"other"
    assert sorted(p.name for p in site.iterdir()) == ["empty.html", "other.txt", "page.html"]
