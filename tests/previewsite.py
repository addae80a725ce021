"""Reading a written preview site the way a browser assembles it."""

from __future__ import annotations

import json
import re
from pathlib import Path

_ENTRIES = re.compile(r"\Adbpreview\.entries\((.*)\);\n\Z", re.DOTALL | re.IGNORECASE)


def index_entries(site: Path) -> str:
    """The index's entries as the page shows them: each file of index/ that index.html loads, in order."""
    index = (site / "index.html").read_text(encoding="utf-8")
    parts = []
    for name in re.findall(r'<script src="(index/\d+\.js)"></script>', index):
        found = _ENTRIES.match((site / name).read_text(encoding="utf-8"))
        assert found, f"{name} is not a file of index entries"
        parts.append(json.loads(found.group(1)))
    return "\n".join(parts)
