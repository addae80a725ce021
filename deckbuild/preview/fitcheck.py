"""The phone-fit check: would anything on a card need sideways scrolling at phone width?

Run in a card page of the preview (after MathJax) by `deckbuild preview --check-fit` and by
the browser tests.  It looks at what the learner sees, not just the page: a box that scrolls
inside itself (a formula, code, a table) fails as much as a page that scrolls; an element
sticking out of the screen fails; on the front a cloze gap must be wholly on screen (inside
math Anki writes the gap as bare ``[...]``, so the formula holding it must fit); and math
must not be shrunk below MIN_MATH_SCALE of its text (the card's fit.js never goes lower).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from deckbuild.apkg.notetypes import TEMPLATES
from deckbuild.errors import DeckbuildError, Location, PreviewError, Problem


def _card_min_scale() -> float:
    """The smallest scale the card's own fit.js applies to a formula: the check holds cards to it."""
    found = re.search(r"var MIN_SCALE = ([0-9.]+);", (TEMPLATES / "fit.js").read_text("utf-8"))
    assert found is not None, "fit.js sets MIN_SCALE"
    return float(found.group(1))


MIN_MATH_SCALE = _card_min_scale()

FIT_JS = r"""
async ([night, side, settle = true]) => {
  const MIN_SCALE = @MIN_SCALE@;
  document.documentElement.classList.toggle("night-mode", night);
  document.body.classList.toggle("nightMode", night);
  document.body.classList.toggle("night_mode", night);
  // Let the card's own script react to a resize or new content: one frame (a frame dispatches
  // its resize events before its animation callbacks; the measurements below force the new
  // style and layout).  `settle` false: only the night classes changed since the last call,
  // which the card's script does not watch.
  if (settle) await new Promise((done) => requestAnimationFrame(done));
  const problems = [];
  const width = window.innerWidth;
  const qa = document.getElementById("qa");
  const tex = new Map();
  if (window.MathJax && MathJax.startup && MathJax.startup.document) {
    for (const item of MathJax.startup.document.math) if (item.typesetRoot) tex.set(item.typesetRoot, item.math.trim());
  }
  const describe = (el) => {
    const container = el.closest("mjx-container");
    if (container && tex.has(container)) return `formula ${tex.get(container).slice(0, 70)}`;
    const cls = typeof el.className === "string" && el.className ? "." + el.className.trim().split(/\s+/).join(".") : "";
    return el.tagName.toLowerCase() + cls + (el.textContent ? ` "${el.textContent.trim().slice(0, 40)}"` : "");
  };
  const skip = (el) => el.closest("mjx-assistive-mml, style, script") || (el.ownerSVGElement && el.closest("mjx-container"));
  const scroller = document.scrollingElement;
  if (scroller.scrollWidth > width) {
    let culprit = "";
    for (const el of qa.querySelectorAll("*")) {  // the outermost element that sticks out
      if (!skip(el) && el.getBoundingClientRect().right > width + 0.5) { culprit = describe(el); break; }
    }
    problems.push(`page scrolls horizontally (${scroller.scrollWidth}px wide in ${width}px; first too wide: ${culprit})`);
  }
  const scrolling = [];
  for (const el of qa.querySelectorAll("*")) {
    if (skip(el) || scrolling.some((box) => box.contains(el))) continue;
    const style = getComputedStyle(el);
    if (style.display === "none" || !el.getClientRects().length) continue;
    if (el.scrollWidth > el.clientWidth + 1 && /auto|scroll|hidden/.test(style.overflowX)) {
      scrolling.push(el);
      problems.push(`needs horizontal scrolling: ${describe(el)} (${el.scrollWidth}px of content in a ${el.clientWidth}px box)`);
      continue;
    }
    const rect = el.getBoundingClientRect();
    if (rect.width > 0 && (rect.right > width + 0.5 || rect.left < -0.5)) {
      scrolling.push(el);
      problems.push(`wider than the screen: ${describe(el)} (${Math.round(rect.left)}px to ${Math.round(rect.right)}px in ${width}px)`);
    }
  }
  for (const box of qa.querySelectorAll("mjx-container")) {
    const scale = parseFloat(getComputedStyle(box).fontSize) / parseFloat(getComputedStyle(box.parentElement).fontSize);
    if (scale < MIN_SCALE - 0.005) problems.push(`math shrunk to ${Math.round(scale * 100)}% (minimum ${MIN_SCALE * 100}%): ${describe(box)}`);
  }
  if (side === "front") {
    const visible = (el) => {
      const rect = el.getBoundingClientRect();
      if (rect.left < -0.5 || rect.right > width + 0.5) return false;
      for (let up = el.parentElement; up && up !== qa; up = up.parentElement) {
        const box = up.getBoundingClientRect();
        if (/auto|scroll|hidden/.test(getComputedStyle(up).overflowX) && (rect.left < box.left - 0.5 || rect.right > box.right + 0.5)) return false;
      }
      return true;
    };
    for (const gap of qa.querySelectorAll(".cloze")) {
      if (!visible(gap)) problems.push(`cloze gap not fully on screen: ${describe(gap)}`);
    }
    // Inside math Anki writes the gap as bare "[...]" (or "[hint]"): the formula holding it must fit.
    for (const [box, source] of tex) {
      if (!qa.contains(box) || !/\[(\.\.\.|\\text\{[^}]*\})\]/.test(source)) continue;
      if (!visible(box) || box.scrollWidth > box.clientWidth + 1) problems.push(`cloze gap not fully on screen: ${describe(box)}`);
    }
  }
  return problems;
}
""".replace("@MIN_SCALE@", str(MIN_MATH_SCALE))


class DoesNotFit(DeckbuildError):
    """Some card would need horizontal scrolling on a phone (E190); the preview was written."""

    def __init__(self, problems: Sequence[Problem], cards: int) -> None:
        self._problems = tuple(problems)
        super().__init__(f"{cards} card(s) do not fit a {PHONE[0]}-px screen; the preview shows them")

    def problems(self) -> Sequence[Problem]:
        return self._problems


PHONE = (360, 740)
"""The phone screen every card must fit, in CSS pixels (width, height)."""


def fit_problems(site: Path, keys: Sequence[str], where: Mapping[str, Location]) -> list[Problem]:
    """Open every card page of the preview in `site` at phone size, light and night, front and back.

    Returns one E190 problem per card side and mode that does not fit, located at the card's
    source (`where`: card id -> its place; a card without one is a retired note, which ships
    frozen as it last shipped, with no source to fix: skipped).  Needs Playwright and
    Chromium (the [test] extra and `apt-get install chromium`).
    """
    try:
        from playwright.sync_api import sync_playwright
    except ModuleNotFoundError as exc:
        raise PreviewError("--check-fit needs Playwright: pip install 'deckbuild[test]' (and Chromium)") from exc
    from deckbuild.preview.chromium import launch_chromium

    site = site.resolve()
    problems: list[Problem] = []
    with sync_playwright() as playwright:
        try:
            browser = launch_chromium(playwright)
        except RuntimeError as exc:
            raise PreviewError(str(exc)) from exc
        try:
            page = browser.new_page(viewport={"width": PHONE[0], "height": PHONE[1]})
            for key in keys:
                card_id = key.rsplit(".c", 1)[0] if re.search(r"\.c\d+$", key) else key
                location = where.get(card_id)
                if location is None:
                    continue
                page.goto((site / "cards" / f"{key}.html").as_uri(), wait_until="load")
                page.evaluate("() => MathJax.startup.promise")
                for side in ("front", "back"):
                    if side == "back":
                        page.evaluate("() => dbPreview.flip()")
                    page.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")
                    for night in (False, True):  # night mode after light: no resize, nothing new to settle
                        for found in page.evaluate(FIT_JS, [night, side, not night]):
                            mode = "night" if night else "light"
                            problems.append(Problem(location, "E190", f"card {key!r} {side} ({mode}, {PHONE[0]} px): {found}"))
        finally:
            browser.close()
    return problems
