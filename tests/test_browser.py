"""Every card of a deck, as `deckbuild preview` renders it, in headless Chromium: phone and desktop, light and night.

For each card, front then back (flipped in place, as Anki's reviewer does): the page
never scrolls horizontally, every image loads, all math is typeset (no raw \\( left, no
MathJax error or unknown macro), no console or page error, nothing is fetched from the
network.  One browser and one tab serve a whole deck, each side is checked in all four
configurations by resizing the viewport and toggling the night classes in place, and
cards after the first are swapped into the loaded page: about 0.15-0.25 s per card on
2 cores, so ~250 cards take about a minute.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import PROJECTS, REPO

from deckbuild.preview.site import write_preview

CONFIGS = [(360, 740, False), (360, 740, True), (1280, 800, True), (1280, 800, False)]
LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:")

# Run in the page after MathJax has finished: a list of problems for the current configuration.
CHECK_JS = r"""
(night) => {
  document.documentElement.classList.toggle("night-mode", night);
  document.body.classList.toggle("nightMode", night);
  document.body.classList.toggle("night_mode", night);
  const problems = [];
  const width = window.innerWidth, scroller = document.scrollingElement;
  if (scroller.scrollWidth > width) {
    let culprit = "";
    for (const el of document.querySelectorAll("#qa *")) {  // the outermost element that sticks out
      if (el.getBoundingClientRect().right > width + 0.5) {
        culprit = el.tagName.toLowerCase() + (typeof el.className === "string" && el.className ? "." + el.className.trim().split(/\s+/).join(".") : "");
        break;
      }
    }
    problems.push(`page scrolls horizontally (${scroller.scrollWidth}px wide in ${width}px; first too wide: ${culprit})`);
  }
  for (const img of document.images) {
    if (!img.complete || img.naturalWidth === 0) problems.push(`image did not load: ${img.getAttribute("src")}`);
  }
  const walker = document.createTreeWalker(document.getElementById("qa"), NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (parent && parent.closest("style, script, mjx-assistive-mml")) continue;
    if (/\\[(\[]/.test(node.data)) problems.push(`math left untypeset: ${node.data.trim().slice(0, 60)}`);
  }
  return problems;
}
"""

# Run once per page: MathJax's own record of each formula (TeX errors and, via noundefined, unknown macros in red).
MATH_JS = r"""
async () => {
  await MathJax.startup.promise;
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  const problems = [];
  const qa = document.getElementById("qa");
  for (const item of MathJax.startup.document.math) {
    if (!qa.contains(item.start.node)) continue;
    const mml = MathJax.startup.toMML(item.root);
    if (/<merror|mathcolor="red"/.test(mml)) problems.push(`MathJax error in: ${item.math.trim().slice(0, 60)}`);
  }
  return problems;
}
"""


# Put another card's two sides into the page's templates and show its front, awaiting MathJax.
SWAP_JS = """
([front, back]) => {
  document.getElementById("pv-front").innerHTML = front;
  document.getElementById("pv-back").innerHTML = back;
  return dbPreview.show("front");
}
"""


def card_sides(page_html: str) -> tuple[str, str]:
    """The front and back HTML a card page holds in its two templates."""
    sides = []
    for side in ("front", "back"):
        start = page_html.index(f'<template id="pv-{side}">') + len(f'<template id="pv-{side}">')
        sides.append(page_html[start : page_html.index("</template>", start)])
    return sides[0], sides[1]


@dataclass
class Tab:
    """One browser tab that records what went wrong, per card page."""

    page: Any
    current: str = ""
    events: dict[str, list[str]] = field(default_factory=dict)

    def note(self, problem: str) -> None:
        self.events.setdefault(self.current, []).append(problem)

    def check_card(self, path: Path, label: str) -> list[str]:
        """Show one card's front, check it, flip it (as a learner does), check the back.

        The first card page is loaded for real; later cards are swapped into the same page,
        as Anki's reviewer swaps cards into one long-lived web view.  Loading MathJax for
        every page would triple the time and test nothing more: the pages differ only in
        the two sides and the links.
        """
        self.current = label
        if not self.page.url.startswith(path.parent.as_uri() + "/"):
            self.page.goto(path.as_uri(), wait_until="load")
        else:
            front, back = card_sides(path.read_text(encoding="utf-8"))
            self.page.evaluate(SWAP_JS, [front, back])
        problems = self.check_side(f"{label} front")
        self.page.evaluate("() => dbPreview.flip()")
        problems += self.check_side(f"{label} back")
        return problems + [f"{label}: {e}" for e in self.events.pop(label, [])]

    def check_side(self, label: str) -> list[str]:
        """The side now shown, in every configuration; each problem names the card, side and configuration."""
        problems = [f"{label}: {p}" for p in self.page.evaluate(MATH_JS)]
        for width, height, night in CONFIGS:
            if self.page.viewport_size != {"width": width, "height": height}:
                self.page.set_viewport_size({"width": width, "height": height})
            mode = "night" if night else "light"
            problems += [f"{label} {width}x{height} {mode}: {p}" for p in self.page.evaluate(CHECK_JS, night)]
        return problems


@pytest.fixture(scope="module")
def tab() -> Iterator[Tab]:
    from playwright.sync_api import sync_playwright

    from deckbuild.preview.chromium import launch_chromium

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page()
        tab = Tab(page)
        page.on("console", lambda msg: tab.note(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
        page.on("pageerror", lambda exc: tab.note(f"page error: {exc}"))
        page.on("request", lambda req: None if req.url.startswith(LOCAL_SCHEMES) else tab.note(f"external request: {req.url}"))
        try:
            yield tab
        finally:
            browser.close()


DECKS = [
    pytest.param(REPO, id="shipped"),
    pytest.param(PROJECTS / "sample", id="sample"),
    pytest.param(PROJECTS / "phone", id="phone"),  # the templates at their extremes
]


def _copy_deck(root: Path, dest: Path) -> Path:
    """The project's sources (and diagram cache, to save time) in a private folder: tests never write to the repo."""
    target = dest / "deck"
    target.mkdir()
    for name in ("deck.yaml", "deckbuild.lock", "CHANGELOG.md"):
        if (root / name).exists():
            shutil.copyfile(root / name, target / name)
    for name in ("cards", "media", "releases", ".deckbuild-cache"):
        if (root / name).is_dir():
            shutil.copytree(root / name, target / name, ignore=shutil.ignore_patterns("*.lock"))
    return target


@pytest.fixture(scope="module", params=DECKS)
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("deck")
    project = _copy_deck(request.param, work)
    write_preview(project, work / "preview")
    return work / "preview"


def card_pages(site: Path) -> list[Path]:
    return sorted((site / "cards").glob("*.html"))


def test_every_card_renders_cleanly_on_phone_and_desktop_light_and_night(site: Path, tab: Tab) -> None:
    pages = card_pages(site)
    assert pages, "the preview has no card pages"
    problems: list[str] = []
    for path in pages:
        problems += tab.check_card(path, f"card '{path.stem}'")
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems)


def test_index_filters_by_difficulty_topic_and_text(site: Path, tab: Tab) -> None:
    tab.current = "index"
    tab.page.set_viewport_size({"width": 360, "height": 740})
    tab.page.goto((site / "index.html").as_uri())
    tab.page.evaluate("() => MathJax.startup.promise")
    rows = tab.page.locator("#cards > li")
    total = rows.count()
    assert total == len(card_pages(site))
    visible = "() => document.querySelectorAll('#cards > li:not([hidden])').length"
    difficulty = tab.page.locator("#difficulty option").nth(1).get_attribute("value")
    tab.page.select_option("#difficulty", difficulty)
    expected = tab.page.evaluate(f"() => document.querySelectorAll('#cards > li[data-difficulty=\"{difficulty}\"]').length")
    assert tab.page.evaluate(visible) == expected
    tab.page.select_option("#difficulty", "")
    topic = tab.page.locator("#topic option").nth(1).get_attribute("value")
    tab.page.select_option("#topic", topic)
    assert 0 < tab.page.evaluate(visible) <= total
    tab.page.select_option("#topic", "")
    first_id = tab.page.locator("#cards > li .pv-sub").first.inner_text().split(" · ")[0]
    tab.page.fill("#q", first_id)
    assert tab.page.evaluate(visible) >= 1
    tab.page.fill("#q", "zzz-no-card-has-this")
    assert tab.page.evaluate(visible) == 0
    assert tab.page.evaluate("() => document.scrollingElement.scrollWidth <= innerWidth")
    assert not tab.events.pop("index", [])


def test_the_checks_catch_a_broken_card(tmp_path: Path, tab: Tab) -> None:
    """A card page with a too-wide element, a missing image, raw math, a MathJax error and a network fetch."""
    project = _copy_deck(PROJECTS / "sample", tmp_path)
    site = tmp_path / "preview"
    write_preview(project, site)
    good = (site / "cards" / "math-answer.html").read_text(encoding="utf-8")
    broken = good.replace(
        '<template id="pv-back">',
        '<template id="pv-back"><div style="width:2000px">wide</div><img src="missing.png"><code>\\( raw \\)</code>'
        '<p>\\( \\frac{1} \\) \\( \\nosuchmacro \\)</p><img src="http://example.invalid/x.png">',
    )
    page = site / "cards" / "broken.html"
    page.write_text(broken, encoding="utf-8")
    tab.page.goto("about:blank")  # a fresh load, as for the first card of a deck
    problems = "\n".join(tab.check_card(page, "card 'broken'"))
    assert "card 'broken' front" not in problems
    assert "card 'broken' back 360x740 light: page scrolls horizontally" in problems
    assert "1280x800 night: page scrolls horizontally" in problems
    assert "image did not load: missing.png" in problems
    assert "math left untypeset: \\( raw \\)" in problems
    assert "MathJax error in: \\frac{1}" in problems
    assert "MathJax error in: \\nosuchmacro" in problems
    assert "external request: http://example.invalid/x.png" in problems
