"""A readable snapshot of a built .apkg: every note's GUID, fields, tags and mod, the note types, the decks, the media names.

The golden test compares the shipped deck's package with `tests/golden/shipped-deck.json`, so a
refactor that changes any note a learner would see fails loudly.  After an intended change of
the deck or its note types, regenerate the snapshot and review its diff:

    python tests/golden.py --update
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden" / "shipped-deck.json"
SHIPPED_FILES = ("deck.yaml", "cards", "media", "diagrams", "deckbuild.lock", "releases", "CHANGELOG.md")


def snapshot(apkg: Path) -> dict[str, Any]:
    """Everything in the package that reaches a learner, in a stable, diffable order."""
    with zipfile.ZipFile(apkg) as archive, tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "collection.anki2"
        db_path.write_bytes(archive.read("collection.anki2"))
        media_map: dict[str, str] = json.loads(archive.read("media"))
        media = {name: hashlib.sha256(archive.read(member)).hexdigest()[:16] for member, name in media_map.items()}
        db = sqlite3.connect(db_path)
        try:
            models_json, decks_json = db.execute("select models, decks from col").fetchone()
            notes = [
                {"guid": guid, "mid": mid, "mod": mod, "tags": tags.split(), "fields": flds.split("\x1f")}
                for guid, mid, mod, tags, flds in db.execute("select guid, mid, mod, tags, flds from notes order by guid")
            ]
            cards = [
                list(row)
                for row in db.execute(
                    "select n.guid, c.ord, c.due from cards c join notes n on n.id = c.nid order by n.guid, c.ord"
                )
            ]
        finally:
            db.close()
    models = {}
    for model in json.loads(models_json).values():
        models[str(model["id"])] = {
            "name": model["name"],
            "type": model["type"],
            "fields": [[f["name"], f["ord"], f.get("id")] for f in model["flds"]],
            "templates": [[t["name"], t["ord"], t.get("id"), _sha(t["qfmt"]), _sha(t["afmt"])] for t in model["tmpls"]],
            "css": _sha(model["css"]),
        }
    decks = sorted([deck["id"], deck["name"]] for deck in json.loads(decks_json).values())
    return {"decks": decks, "models": models, "media": dict(sorted(media.items())), "notes": notes, "cards": cards}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def copy_shipped(dest: Path) -> Path:
    """A private copy of the repo's deck project (its sources, record and releases) in dest."""
    for name in SHIPPED_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, dest / name)
        elif source.exists():
            shutil.copy2(source, dest / name)
    return dest


def build_shipped(dest: Path) -> Path:
    """Build a private copy of the repo's deck in dest; returns the package path."""
    from deckbuild.commands import build

    return build(copy_shipped(dest)).path


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def main(argv: list[str]) -> int:
    if argv != ["--update"]:
        print(__doc__)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(dumps(snapshot(build_shipped(Path(tmp)))), encoding="utf-8")
    print(f"wrote {GOLDEN.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main(sys.argv[1:]))
