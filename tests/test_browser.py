"""Every card of a deck, as `deckbuild preview` renders it, in headless Chromium: phone and desktop, light and night.

For each card, front then back (flipped in place, as Anki's reviewer does): the page
never scrolls horizontally, every image loads, all math is typeset (no raw \\( left, no
MathJax error or unknown macro), no console or page error, nothing is fetched from the
network.  One browser and one tab serve a whole deck, each side is checked in all four
configurations by resizing the viewport and toggling the night classes in place, and
cards after the first are swapped into the loaded page: the shipped deck's ~330 card
pages take about two minutes on 2 cores.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import PROJECTS, REPO

from deckbuild.preview.fitcheck import FIT_JS
from deckbuild.preview.site import write_preview

CONFIGS = [(360, 740, False), (360, 740, True), (1280, 800, True), (1280, 800, False)]
"""Each side is checked in these four; the back walks them in reverse, so a card costs two
viewport resizes, and a configuration that only toggles night mode needs no frame to settle."""
LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:")

# Run in the page after FIT_JS (which sets night mode, lets the card's script fit the math and
# checks phone fit): the other problems of the current configuration.
# Images load asynchronously after a side is swapped in: each is awaited (loaded or failed,
# at most 5 s) before it is judged, so a busy machine cannot turn "still loading" into "broken".
CHECK_JS = r"""
async () => {
  const problems = [];
  const settled = Promise.all([...document.images].map((img) => img.decode().catch(() => null)));
  await Promise.race([settled, new Promise((done) => setTimeout(done, 5000))]);
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
        problems = self.check_side(f"{label} front", "front")
        self.page.evaluate("() => dbPreview.flip()")
        problems += self.check_side(f"{label} back", "back")
        return problems + [f"{label}: {e}" for e in self.events.pop(label, [])]

    def check_side(self, label: str, side: str) -> list[str]:
        """The side now shown, in every configuration; each problem names the card, side and configuration."""
        problems = [f"{label}: {p}" for p in self.page.evaluate(MATH_JS)]
        settle = True  # the side's content is new
        for width, height, night in CONFIGS if side == "front" else CONFIGS[::-1]:
            if self.page.viewport_size != {"width": width, "height": height}:
                self.page.set_viewport_size({"width": width, "height": height})
                settle = True
            mode = "night" if night else "light"
            found = self.page.evaluate(FIT_JS, [night, side, settle]) + self.page.evaluate(CHECK_JS)
            settle = False
            problems += [f"{label} {width}x{height} {mode}: {p}" for p in found]
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
    for name in ("cards", "media", "diagrams", "releases", ".deckbuild-cache"):
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


def _retired_ids(site: Path) -> set[str]:
    """Notes the last release retired: they keep shipping, their fronts saying so."""
    import json

    releases = sorted(site.parent.glob("*/releases/*.jsonl"), key=lambda p: tuple(int(x) for x in p.stem.split(".")))
    retired: set[str] = set()
    for line in releases[-1].read_text(encoding="utf-8").splitlines()[1:] if releases else []:
        note = json.loads(line)
        if note.get("retired"):
            retired.add(note["id"])
    return retired


def test_every_card_renders_cleanly_on_phone_and_desktop_light_and_night(site: Path, tab: Tab) -> None:
    """Every card, every check, retired notes included: a learner still reviews them."""
    pages = card_pages(site)
    assert pages, "the preview has no card pages"
    retired = _retired_ids(site)
    problems: list[str] = []
    seen_retired = 0
    for path in pages:
        problems += tab.check_card(path, f"card '{path.stem}'")
        if path.stem.split(".c")[0] in retired:
            seen_retired += 1
            assert "Retired card." in card_sides(path.read_text(encoding="utf-8"))[0], (
                f"{path.stem}: front does not say it retired"
            )
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems)
    assert bool(seen_retired) == bool(retired), "a retired note of the last release has no page in the preview"


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


def _tiny_project(root: Path, cards: str) -> Path:
    """A throwaway deck project with one card file."""
    from conftest import write_tree

    return write_tree(
        root / "deck",
        {
            "deck.yaml": "name: Fit Check\nnamespace: fit-check\nversion: 1.0.0\noutput: dist\n",
            "cards/fit.yaml": cards,
        },
    )


PLANTED = r"""
- id: wide
  question: A planted formula, far too wide for a phone?
  answer: |
    \[ a_1 + a_2 + a_3 + a_4 + a_5 + a_6 + a_7 + a_8 + a_9 + a_{10} + a_{11} + a_{12} + a_{13} + a_{14} + a_{15} + a_{16} + a_{17} + a_{18} \]
  difficulty: easy
  topics: [fit::planted]
- id: wide-gap
  formula: 'b_1 + b_2 + b_3 + b_4 + b_5 + b_6 + b_7 + b_8 + b_9 + b_{10} + b_{11} + b_{12} + b_{13} + b_{14} + b_{15} = {{c1::S}}'
  of: wide
- id: broken-lines
  formula: 'b_1 + b_2 + b_3 + b_4 + b_5 + b_6 + b_7 \\ + b_8 + b_9 + b_{10} + b_{11} + b_{12} + b_{13} \\ = {{c1::S}}'
  of: wide
"""


def test_the_fit_checks_catch_a_planted_too_wide_formula(tmp_path: Path, tab: Tab) -> None:
    """A formula too wide even at 75% fails, naming card and side; a gap beyond the screen fails; so does shrunk math."""
    project = _tiny_project(tmp_path, PLANTED)
    site = tmp_path / "preview"
    write_preview(project, site)
    tab.page.goto("about:blank")
    problems = "\n".join(tab.check_card(site / "cards" / "wide.html", "card 'wide'"))
    assert "card 'wide' back 360x740 light: needs horizontal scrolling: formula a_1 + a_2" in problems
    assert "card 'wide' back 360x740 night: needs horizontal scrolling: formula a_1 + a_2" in problems
    assert "card 'wide' front" not in problems
    problems = "\n".join(tab.check_card(site / "cards" / "wide-gap.html", "card 'wide-gap'"))
    assert "card 'wide-gap' front 360x740 light: cloze gap not fully on screen: formula b_1 + b_2" in problems
    assert "card 'wide-gap' back 360x740 night: needs horizontal scrolling" in problems
    # The same formula broken where the author marked it (\\) fits, at full size or scaled >= 75%.
    assert tab.check_card(site / "cards" / "broken-lines.html", "card 'broken-lines'") == []
    # Math shrunk below 75% (by a stylesheet, say) is caught.
    page = site / "cards" / "shrunk.html"
    page.write_text(
        (site / "cards" / "broken-lines.html")
        .read_text(encoding="utf-8")
        .replace('<template id="pv-back">', '<template id="pv-back"><style>mjx-container { font-size: 50% !important; }</style>'),
        encoding="utf-8",
    )
    tab.page.goto("about:blank")
    problems = "\n".join(tab.check_card(page, "card 'shrunk'"))
    assert "card 'shrunk' back 360x740 light: math shrunk to 50% (minimum 75%)" in problems


def test_the_revealed_deletion_is_highlighted_inside_math_light_and_night(tmp_path: Path, tab: Tab) -> None:
    """Anki leaves a math deletion unmarked; deckbuild's \\class{db-cN} + CSS colours card N's own, on the back only."""
    project = _tiny_project(
        tmp_path,
        r"""
- id: q
  question: Which?
  answer: This.
  difficulty: easy
  topics: [fit::highlight]
- id: two-gaps
  formula: 'x = {{c1::a}} + {{c2::b}}'
  of: q
""",
    )
    site = tmp_path / "preview"
    write_preview(project, site)
    tab.page.goto((site / "cards" / "two-gaps.c1.html").as_uri() + "#answer")
    tab.page.evaluate("() => MathJax.startup.promise")
    colour = """(night) => {
      document.body.classList.toggle("nightMode", night);
      const fill = (sel) => getComputedStyle(document.querySelector(sel)).fill;
      return [fill("#qa .db-c1"), fill("#qa .db-c2"), getComputedStyle(document.querySelector("#qa .db-cloze-text")).color];
    }"""
    light = tab.page.evaluate(colour, False)
    night = tab.page.evaluate(colour, True)
    assert light[0] == "rgb(10, 99, 194)" and light[1] != light[0]  # card 1: c1 coloured, c2 plain
    assert night[0] == "rgb(122, 183, 255)" and night[1] != night[0]
    assert not tab.events.pop(tab.current, [])


def test_preview_check_fit_command_names_each_card_that_does_not_fit(tmp_path: Path) -> None:
    """The author's command: `deckbuild preview --check-fit`, a real process; exit 1 with E190 lines."""
    import subprocess
    import sys

    project = _tiny_project(tmp_path, PLANTED)
    run = subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", "preview", "-q", "--check-fit"], cwd=project, capture_output=True, text=True
    )
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    assert "cards/fit.yaml:1:3: E190 card 'wide' back (light, 360 px): needs horizontal scrolling: formula a_1" in output
    assert "E190 card 'wide-gap' front (night, 360 px): cloze gap not fully on screen" in output
    assert "broken-lines" not in output
    assert "error: 2 card(s) do not fit a 360-px screen" in output
    assert "Traceback" not in output
