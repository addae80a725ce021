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
