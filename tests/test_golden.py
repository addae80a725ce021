"""The shipped deck's package, unpacked, equals the committed snapshot (tests/golden.py explains how to regenerate it)."""

from __future__ import annotations

import json
from pathlib import Path

from golden import GOLDEN, dumps, snapshot

from deckbuild.plan import plan


def test_shipped_package_matches_golden_snapshot(shipped_project: Path) -> None:
    package = plan(shipped_project, "check").package
    assert package is not None
    actual = snapshot(package)
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    for key in ("decks", "models", "media"):
        assert actual[key] == expected[key], (
            f"{key} differ from tests/golden/shipped-deck.json (python tests/golden.py --update after an intended change)"
        )
    expected_notes = {note["guid"]: note for note in expected["notes"]}
    actual_notes = {note["guid"]: note for note in actual["notes"]}
    assert sorted(actual_notes) == sorted(expected_notes), "the set of note GUIDs changed"
    changed = [guid for guid in actual_notes if actual_notes[guid] != expected_notes[guid]]
    assert not changed, f"{len(changed)} notes differ from the snapshot, e.g. {changed[:3]}"
    assert actual["cards"] == expected["cards"]
    assert dumps(actual) == GOLDEN.read_text(encoding="utf-8")
