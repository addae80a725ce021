"""Every module under deckbuild/ has one job: at most 500 lines, and a name that says the job.

A name such as util, misc, helpers or part says nothing about what the module does; a
module over 500 lines is doing several things and is split along its jobs.
"""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "deckbuild"
MAX_LINES = 500
VAGUE = re.compile(r"^_?(utils?|misc|helpers?|parts?\d*|common|stuff)(_|$)")


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_over_500_lines() -> None:
    long = {
        path.relative_to(PACKAGE).as_posix(): n
        for path in _modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_no_module_named_for_nothing() -> None:
    vague = [path.relative_to(PACKAGE).as_posix() for path in _modules() if VAGUE.match(path.stem)]
    vague += [path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*") if path.is_dir() and VAGUE.match(path.name)]
    assert vague == []


def test_the_name_rule_catches_vague_names() -> None:
    assert all(VAGUE.match(n) for n in ("util", "utils", "misc", "helpers", "_helpers", "part2", "util_io"))
    assert not any(VAGUE.match(n) for n in ("limits", "partition", "utility_bill", "cloze_scan", "template_language"))
