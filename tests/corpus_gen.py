"""Corpus cases too big or too odd to commit: written into a case's project by the test.

Each generator gets the project copy and the folder beside it that stands for "outside the
project" (it holds secret.png and secret.yaml, which no build may read into a package).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

CARD = """\
- id: {id}
  question: Question {n}?
  answer: Answer {n}.
  difficulty: easy
  topics: [foundations::text]
"""


def card_1mb(project: Path, outside: Path) -> None:
    """One card whose answer is 1 MB of ordinary words."""
    body = ("lorem ipsum dolor sit amet " * 40 + "\n") * 970
    text = "- id: big-card\n  question: Big?\n  answer: |\n" + "".join(f"    {line}\n" for line in body.splitlines())
    text += "  difficulty: easy\n  topics: [foundations::text]\n"
    (project / "cards" / "big.yaml").write_text(text, encoding="utf-8")


def cards_10000(project: Path, outside: Path) -> None:
    """10,000 valid cards in one file."""
    text = "".join(CARD.format(id=f"gen-{n:05d}", n=n) for n in range(10_000))
    (project / "cards" / "many.yaml").write_text(text, encoding="utf-8")


def deep_nesting(project: Path, outside: Path) -> None:
    """A flow sequence nested 10,000 deep (the recursive composer would overflow the C stack)."""
    (project / "cards" / "deep.yaml").write_text("- id: deep\n  details: " + "[" * 10_000 + "]" * 10_000 + "\n")


def billion_laughs(project: Path, outside: Path) -> None:
    """The classic alias bomb: 9 levels of 10 aliases each, 10^9 strings if expanded."""
    lines = ['a0: &a0 "lol"']
    for level in range(1, 10):
        prev = f"*a{level - 1}"
        lines.append(f"a{level}: &a{level} [{', '.join([prev] * 10)}]")
    (project / "cards" / "bomb.yaml").write_text("\n".join(lines) + "\n")


def symlink_media_out(project: Path, outside: Path) -> None:
    """media/evil.png is a link to an image outside the project."""
    os.symlink(outside / "secret.png", project / "media" / "evil.png")
    _image_card(project, "evil.png")


def symlink_media_dir_out(project: Path, outside: Path) -> None:
    """media/ itself is a link to a folder outside the project."""
    (project / "media" / "axes.png").unlink()
    (project / "media").rmdir()
    os.symlink(outside, project / "media")
    _image_card(project, "secret.png")


def symlink_card_file_out(project: Path, outside: Path) -> None:
    """cards/linked.yaml is a link to a card file outside the project."""
    os.symlink(outside / "secret.yaml", project / "cards" / "linked.yaml")


def symlink_deck_yaml_out(project: Path, outside: Path) -> None:
    """deck.yaml is a link to a file outside the project."""
    (outside / "deck.yaml").write_bytes((project / "deck.yaml").read_bytes())
    (project / "deck.yaml").unlink()
    os.symlink(outside / "deck.yaml", project / "deck.yaml")


def symlink_output_out(project: Path, outside: Path) -> None:
    """dist/ is a link to a folder outside the project (the package would be written there)."""
    (project / "dist").rename(project / "dist-moved")
    os.symlink(outside, project / "dist")


def _image_card(project: Path, file: str) -> None:
    text = CARD.format(id="linked-image", n=0) + f"  image:\n    file: {file}\n    alt: A linked image.\n"
    (project / "cards" / "image.yaml").write_text(text)


GENERATORS: dict[str, Callable[[Path, Path], None]] = {
    "card-1mb": card_1mb,
    "cards-10000": cards_10000,
    "deep-nesting": deep_nesting,
    "billion-laughs": billion_laughs,
    "symlink-media-out": symlink_media_out,
    "symlink-media-dir-out": symlink_media_dir_out,
    "symlink-card-file-out": symlink_card_file_out,
    "symlink-deck-yaml-out": symlink_deck_yaml_out,
    "symlink-output-out": symlink_output_out,
}
