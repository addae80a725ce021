"""A project's generator files are read with ast once per content: a build keeps each file's
reading in its cache, and the next process takes it back instead of parsing the file again.
Taken back or read, the registry is the same, problems and locations included."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from deckbuild.diagrams import registry
from deckbuild.diagrams.registry import Registry, scan
from deckbuild.errors import Problem

REPO = Path(__file__).resolve().parents[1]

OWN = """from deckbuild.diagrams import style
from deckbuild.diagrams.api import diagram


@diagram("bars", title="Three bars", cost=50, illustrative=True, time_limit=5)
def bars(height: float = 2.0, label: str = "bars", count: int = 3, filled: bool = True, tiny: float = -0.0):
    fig = style.figure(2.0)
    fig.subplots().bar(range(count), [height] * count)
    return fig
"""

# Problems of every kind a file can have: an import at module level (E286), a default that is
# not a literal (E285), a name defined twice (E285), and a file that does not parse (E285).
ODD = """import matplotlib.pyplot as plt

from deckbuild.diagrams.api import diagram


@diagram("odd")
def odd(n=len("abc")):
    pass


@diagram("bars")
def again(n: int = 1):
    pass


@diagram("tupled")
def tupled(size: int = (1, 2)):
    pass
"""


class DictStore:
    """A store as the build cache is one, in memory: what it was asked for and given."""

    def __init__(self) -> None:
        self.entries: dict[bytes, str] = {}
        self.asked: list[bytes] = []

    def file_entries(self, keys: Iterable[bytes], table: str) -> dict[bytes, str]:
        assert table == "generators"
        keys = list(keys)
        self.asked += keys
        return {k: self.entries[k] for k in keys if k in self.entries}

    def store_file_entries(self, entries: Mapping[bytes, str], table: str) -> None:
        assert table == "generators"
        self.entries.update(entries)


def _project(tmp_path: Path, **files: str) -> Path:
    folder = tmp_path / "deck" / "diagrams"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return tmp_path / "deck"


def _same(left: Registry, right: Registry) -> None:
    assert left.diagrams == right.diagrams
    assert list(left.diagrams) == list(right.diagrams)
    assert [(type(v), v) for i in left.diagrams.values() for v in i.defaults.values()] == [
        (type(v), v) for i in right.diagrams.values() for v in i.defaults.values()
    ]
    assert left.problems == right.problems


@pytest.mark.parametrize("project", ["shipped", "own", "odd"])
def test_a_scan_taken_back_from_the_store_is_the_scan(tmp_path: Path, project: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if project == "shipped":
        root = REPO
    else:
        root = _project(tmp_path, **{"own.py": OWN}, **({"odd.py": ODD, "bad.py": "def (:\n"} if project == "odd" else {}))
    folder = root / "diagrams"
    read = scan(folder, root)
    store = DictStore()
    _same(scan(folder, root, store), read)  # read, and kept
    files = sorted(folder.glob("*.py"))
    assert len(store.entries) == len(files) - (project == "odd")  # odd.py's tuple default is not kept
    parsed: list[str] = []
    real = registry._scan_file

    def counted(path: Path, rel: str, source: bytes) -> tuple[list[registry.DiagramInfo], list[Problem]]:
        parsed.append(rel)
        return real(path, rel, source)

    monkeypatch.setattr(registry, "_scan_file", counted)
    _same(scan(folder, root, store), read)  # taken back
    assert parsed == (["diagrams/odd.py"] if project == "odd" else [])
    if project == "odd":
        codes = sorted(p.code for p in read.problems)
        assert codes == ["E285", "E285", "E285", "E286"] and "tupled" in read.diagrams


def test_a_changed_file_is_read_again_and_a_garbled_entry_is_not_taken(tmp_path: Path) -> None:
    root = _project(tmp_path, **{"own.py": OWN, "other.py": OWN.replace('"bars"', '"other"')})
    store = DictStore()
    scan(root / "diagrams", root, store)
    before = dict(store.entries)
    own = root / "diagrams" / "own.py"
    own.write_text(OWN.replace("count: int = 3", "count: int = 4"), encoding="utf-8")
    assert scan(root / "diagrams", root, store).diagrams["bars"].defaults["count"] == 4
    assert len(store.entries) == 3  # the changed file's new reading beside the two kept ones
    for key in before:
        store.entries[key] = json.dumps({"found": [["bars", "t", "f", {}, {}, True, 1, 1.0, "1", 1]], "problems": []})
    own.write_text(OWN, encoding="utf-8")
    _same(scan(root / "diagrams", root, store), scan(root / "diagrams", root))


def test_a_file_moved_elsewhere_is_read_again(tmp_path: Path) -> None:
    """A DiagramInfo names its file: the same bytes under another path are another reading."""
    root = _project(tmp_path, **{"own.py": OWN})
    store = DictStore()
    scan(root / "diagrams", root, store)
    moved = tmp_path / "moved"
    (root / "diagrams").rename(tmp_path / "diagrams-elsewhere")
    moved.mkdir()
    (tmp_path / "diagrams-elsewhere").rename(moved / "diagrams")
    again = scan(moved / "diagrams", moved, store)
    assert again.diagrams["bars"].source == (moved / "diagrams" / "own.py").resolve()
    assert len(store.entries) == 2


def _scans_in_a_fresh_process(project: Path, goal: str) -> list[str]:
    """The generator files a fresh process parses while it plans `goal` (the rest it takes back)."""
    script = (
        "import sys; from pathlib import Path; import deckbuild.diagrams.registry as r\n"
        "real = r._scan_file; parsed = []\n"
        "def counted(path, rel, source):\n"
        "    parsed.append(rel); return real(path, rel, source)\n"
        "r._scan_file = counted\n"
        "from deckbuild.plan import plan; from deckbuild.apply import apply\n"
        f"p = plan(Path({str(project)!r}), {goal!r}, force=True)\n"
        f"apply(p) if {goal!r} == 'build' else None\n"
        "print(' '.join(parsed))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_a_build_keeps_each_generator_files_reading_for_the_next_process(tmp_path: Path) -> None:
    project = tmp_path / "deck"
    made = subprocess.run([sys.executable, "-m", "deckbuild.cli", "new", str(project)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    (project / "diagrams" / "own.py").write_text(OWN, encoding="utf-8")
    assert _scans_in_a_fresh_process(project, "check") == ["diagrams/curves.py", "diagrams/own.py"]
    assert _scans_in_a_fresh_process(project, "check") == ["diagrams/curves.py", "diagrams/own.py"]  # check writes nothing
    assert _scans_in_a_fresh_process(project, "build") == ["diagrams/curves.py", "diagrams/own.py"]
    assert _scans_in_a_fresh_process(project, "build") == []
    assert _scans_in_a_fresh_process(project, "check") == []
    (project / "diagrams" / "own.py").write_text(OWN.replace("cost=50", "cost=40"), encoding="utf-8")
    assert _scans_in_a_fresh_process(project, "build") == ["diagrams/own.py"]
