"""Phone-width screenshots of representative cards for the README, taken from the preview site.

    python tools/screenshots.py [-C PROJECT] [--out docs/screenshots] [--readme README.md]

Builds the preview, picks cards by rule (a question/answer card with details, a cloze
formula or fact, a card with a figure), shoots each 360 px wide in light and night mode
with headless Chromium, and rewrites the README's screenshot block to show exactly the
images it wrote.  A kind of card the deck lacks is skipped with a message.  Needs
Playwright's Python package (the [test] extra) and Chromium at /usr/bin/chromium.

A development tool of this repository, not part of the deckbuild package: it rewrites the
repository's README.md, which no deckbuild command ever writes.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from deckbuild.preview.chromium import launch_chromium
from deckbuild.preview.fitcheck import PHONE
from deckbuild.preview.site import CardView

START = "<!-- screenshots:start (written by `python tools/screenshots.py`) -->"
END = "<!-- screenshots:end -->"


@dataclass(frozen=True)
class Shot:
    """One representative card side to photograph."""

    name: str  # file stem in docs/screenshots
    caption: str
    key: str  # the preview page (card key)
    side: str  # front | back


def pick_shots(views: Sequence[CardView]) -> list[Shot]:
    """Representative cards chosen by rule, so the screenshots follow the deck as its cards change."""
    shots: list[Shot] = []
    qa = [v for v in views if v.kind == "qa"]
    # The richest question card: details, and math if there is any.
    with_details = [v for v in qa if "<details" in v.back]
    best = next((v for v in with_details if "\\(" in v.back or "\\[" in v.back), None) or next(iter(with_details + qa), None)
    if best is not None:
        shots.append(
            Shot("question-answer", f"Question/answer card `{best.card_id}`, answer with details open", best.key, "back")
        )
    cloze = next((v for v in views if v.kind == "formula"), None) or next((v for v in views if v.kind == "fact"), None)
    if cloze is not None:
        shots.append(Shot("cloze-front", f"Cloze {cloze.kind} card `{cloze.card_id}`, front", cloze.key, "front"))
        shots.append(Shot("cloze-back", f"Cloze {cloze.kind} card `{cloze.card_id}`, back", cloze.key, "back"))
    figure = next((v for v in views if 'class="diagram"' in v.back and v.key != (best.key if best else "")), None)
    figure = figure or next((v for v in views if 'class="diagram"' in v.back), None)
    if figure is not None:
        shots.append(Shot("figure", f"Card with a figure `{figure.card_id}`, back", figure.key, "back"))
    return shots


def take(site: Path, shots: Sequence[Shot], out: Path, width: int = PHONE[0], height: int = PHONE[1]) -> list[Path]:
    """PNG files `<name>-light.png` and `<name>-night.png` for every shot, the preview's bar hidden."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as playwright:
        try:
            browser = launch_chromium(playwright)
        except RuntimeError as exc:
            raise SystemExit(str(exc)) from None
        try:
            page = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=2)
            for shot in shots:
                for mode in ("light", "night"):
                    query = "?night=1" if mode == "night" else ""
                    anchor = "#answer" if shot.side == "back" else ""
                    page.goto((site / "cards" / f"{shot.key}.html").as_uri() + query + anchor)
                    page.evaluate(
                        "async () => { await MathJax.startup.promise;"
                        " document.querySelectorAll('details').forEach((d) => { d.open = true; });"
                        " document.querySelector('.pv-bar').remove(); }"
                    )
                    path = out / f"{shot.name}-{mode}.png"
                    page.screenshot(path=str(path), full_page=True)
                    written.append(path)
                    print(f"  wrote {path}", file=sys.stderr)
        finally:
            browser.close()
    return written


def readme_block(shots: Sequence[Shot], out: Path, readme: Path) -> str:
    """A table of light/night pairs, with paths relative to the README."""
    rel = os.path.relpath(out, readme.parent).replace(os.sep, "/")
    lines = [START, "", "| | light | night |", "|---|---|---|"]
    for shot in shots:
        alt = shot.caption.replace("`", "")
        light = f"![{alt}, light]({rel}/{shot.name}-light.png)"
        night = f"![{alt}, night]({rel}/{shot.name}-night.png)"
        lines.append(f"| {shot.caption} | {light} | {night} |")
    return "\n".join([*lines, "", END])


def update_readme(readme: Path, block: str) -> bool:
    """Replace the block between the markers; False if the README has no markers."""
    text = readme.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        return False
    readme.write_text(pattern.sub(lambda _m: block, text), encoding="utf-8")
    return True


def main(argv: Sequence[str] | None = None) -> int:
    from deckbuild.preview.site import write_preview

    parser = argparse.ArgumentParser(prog="python tools/screenshots.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("-C", "--project", type=Path, default=Path("."), help="deck project (default: .)")
    parser.add_argument(
        "--out", type=Path, default=Path("docs/screenshots"), help="where the PNGs go (default: docs/screenshots)"
    )
    parser.add_argument("--readme", type=Path, default=Path("README.md"), help="README whose screenshot block to rewrite")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="deckbuild-shots-") as tmp:
        site = Path(tmp) / "preview"
        result = write_preview(args.project, site)
        shots = pick_shots(result.views)
        if not shots:
            print("no cards to photograph", file=sys.stderr)
            return 1
        kinds = {s.name.split("-")[0] for s in shots}
        for kind, what in (("question", "question/answer"), ("cloze", "cloze formula/fact"), ("figure", "figure")):
            if kind not in kinds:
                print(f"  no {what} card in this deck: skipped", file=sys.stderr)
        for stale in args.out.glob("*.png") if args.out.is_dir() else ():
            stale.unlink()
        take(site, shots, args.out)
    if args.readme.exists() and update_readme(args.readme, readme_block(shots, args.out, args.readme)):
        print(f"updated the screenshot block in {args.readme}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
