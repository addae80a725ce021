"""A project's own diagram generators (diagrams/*.py): found statically, drawn in the worker
pool, named by their picture's bytes, and every mistake a coded error at a file and line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

GENERATOR = '''"""The project's own diagram."""

from deckbuild.diagrams import style
from deckbuild.diagrams.api import diagram


@diagram("bars", title="Three bars", cost=50)
def bars(height: float = 2.0, label: str = "bars", count: int = 3):
    fig = style.figure(2.0)
    ax = fig.subplots()
    ax.bar(range(count), [height] * count, color=style.BLUE)
    ax.set_title(label)
    return fig


@diagram("slow", time_limit=1)
def slow():
    import time

    time.sleep(30)
    return style.figure(1.0)


@diagram("broken")
def broken(divisor: int = 0):
    fig = style.figure(1.0)
    fig.text(0.5, 0.5, str(1 / divisor))
    return fig


@diagram("quits")
def quits():
    import sys

    sys.exit(3)


@diagram("ends")
def ends():
    import os

    os._exit(9)
'''

CARD = """
- id: bars-picture
  question: How many bars does the project's own diagram draw?
  answer: Three, all of the same height.
  difficulty: easy
  topics: [algebra::quadratics]
  diagram:
    name: bars
    params: {PARAMS}
    alt: Three blue bars of equal height.
"""


def _deckbuild(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DECKBUILD_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", *args, "-C", str(project)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def _new(tmp_path: Path, params: str = "{}") -> Path:
    project = tmp_path / "deck"
    made = subprocess.run([sys.executable, "-m", "deckbuild.cli", "new", str(project)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    (project / "diagrams").mkdir(exist_ok=True)
    (project / "diagrams" / "own.py").write_text(GENERATOR, encoding="utf-8")
    with (project / "cards" / "examples.yaml").open("a", encoding="utf-8") as handle:
        handle.write(CARD.replace("{PARAMS}", params))
    return project


def _lock_media(project: Path) -> dict[str, str]:
    """Every note's figure file name as the build record keeps it (card id -> name)."""
    record = json.loads((project / "deckbuild.lock").read_text(encoding="utf-8"))
    text = json.dumps(record)
    return dict.fromkeys(re.findall(r"bars-[0-9a-f]{12}\.png", text), "")


def _changed(result: subprocess.CompletedProcess[str]) -> int:
    found = re.search(r"\((\d+) notes? changed", result.stdout + result.stderr)
    assert found, result.stdout + result.stderr
    return int(found.group(1))


def _package_names(project: Path) -> set[str]:
    import zipfile

    (apkg,) = (project / "dist").glob("*.apkg")
    with zipfile.ZipFile(apkg) as z:
        return set(json.loads(z.read("media")).values())


def test_a_new_decks_own_generator_builds_and_updates_exactly_its_notes(tmp_path: Path) -> None:
    project = _new(tmp_path)
    first = _deckbuild(project, "build")
    assert first.returncode == 0, first.stderr
    names = {n for n in _package_names(project) if n.startswith("bars-")}
    assert len(names) == 1 and re.fullmatch(r"bars-[0-9a-f]{12}\.png", next(iter(names)))
    (package,) = (project / "dist").glob("*.apkg")
    package_bytes = package.read_bytes()
    (tmp_path / "first.apkg").write_bytes(package_bytes)
    source = project / "diagrams" / "own.py"
    # A comment: the same pixels, so the same name and no note changes.
    source.write_text(
        source.read_text(encoding="utf-8").replace("    fig = style.figure(2.0)", "    # a comment\n    fig = style.figure(2.0)"),
        encoding="utf-8",
    )
    same = _deckbuild(project, "build")
    assert same.returncode == 0, same.stderr
    assert package.read_bytes() == package_bytes  # the same picture: the same package
    assert _changed(same) == 0
    assert {n for n in _package_names(project) if n.startswith("bars-")} == names
    # Another colour: another picture, another name, and only the note showing it changes.
    source.write_text(source.read_text(encoding="utf-8").replace("color=style.BLUE", "color=style.ORANGE"), encoding="utf-8")
    other = _deckbuild(project, "build")
    assert other.returncode == 0, other.stderr
    new_names = {n for n in _package_names(project) if n.startswith("bars-")}
    assert len(new_names) == 1 and new_names != names
    assert _changed(other) == 1
    assert not (project / "diagrams" / "__pycache__").exists()
    # In a learner's Anki: importing the new package updates that one note, which shows the new picture.
    from ankiutil import import_package, new_collection, notes_by_card_id

    col = new_collection(tmp_path / "anki")
    try:
        assert len(import_package(col, tmp_path / "first.apkg").new) == 5
        before = {cid: list(note.fields) for cid, note in notes_by_card_id(col).items()}
        log = import_package(col, package)
        assert [n.fields[-3] for n in log.updated] == ["bars-picture"] and not log.new
        after = {cid: list(note.fields) for cid, note in notes_by_card_id(col).items()}
        assert [cid for cid in after if after[cid] != before[cid]] == ["bars-picture"]
        (new_name,) = new_names
        assert new_name in " ".join(after["bars-picture"]) and (Path(col.media.dir()) / new_name).is_file()
    finally:
        col.close()


def test_a_no_op_build_of_a_project_with_its_own_generator_never_imports_matplotlib(tmp_path: Path) -> None:
    project = _new(tmp_path)
    assert _deckbuild(project, "build").returncode == 0
    script = (
        "import sys; from pathlib import Path; from deckbuild.commands import build; "
        f"r = build(Path({str(project)!r})); "
        "print(r.written, 'matplotlib' in sys.modules, 'numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]


def test_check_reads_generators_without_running_them(tmp_path: Path) -> None:
    project = _new(tmp_path)
    marker = tmp_path / "ran"
    (project / "diagrams" / "side.py").write_text(f"open({str(marker)!r}, 'w').close()\nimport matplotlib\n", encoding="utf-8")
    script = (
        "import sys; from pathlib import Path; from deckbuild.plan import plan; "
        f"p = plan(Path({str(project)!r}), 'check'); "
        "print(*[q.code for q in p.problems], 'matplotlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["E286", "False"]  # the module-level import is read, not run
    assert not marker.exists()


@pytest.mark.parametrize(
    ("params", "code", "says"),
    [
        ("{heigth: 3.0}", "E281", "unknown parameter 'heigth'; accepted parameters: count, height, label (diagrams/own.py:8:1)"),
        ("{count: '3'}", "E282", "parameter 'count' must be int, not str (diagrams/own.py:8:1)"),
        ("{label: 3}", "E282", "parameter 'label' must be str, not int"),
    ],
)
def test_wrong_parameters_are_coded_at_the_card(tmp_path: Path, params: str, code: str, says: str) -> None:
    project = _new(tmp_path, params)
    result = _deckbuild(project, "check")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = [ln for ln in result.stderr.splitlines() if f" {code} " in ln]
    assert re.match(rf"cards/examples\.yaml:\d+:\d+: {code} card 'bars-picture': diagram: diagram 'bars': ", line), line
    assert says in line


def test_an_unknown_generator_is_coded_and_a_moved_one_gets_a_hint(tmp_path: Path) -> None:
    project = _new(tmp_path)
    cards = project / "cards" / "examples.yaml"
    cards.write_text(cards.read_text(encoding="utf-8").replace("name: bars", "name: warmup-cosine"), encoding="utf-8")
    result = _deckbuild(project, "check")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = [ln for ln in result.stderr.splitlines() if " E280 " in ln]
    assert re.match(r"cards/examples\.yaml:\d+:\d+: E280 card 'bars-picture': diagram: unknown diagram 'warmup-cosine'; ", line)
    assert "known diagrams: bars, broken, ends, quadratic, quits, slow" in line
    assert "deckbuild no longer ships inside its package" in line and "copy its file into this project's diagrams/" in line
    cards.write_text(cards.read_text(encoding="utf-8").replace("name: warmup-cosine", "name: barz"), encoding="utf-8")
    (line,) = [ln for ln in _deckbuild(project, "check").stderr.splitlines() if " E280 " in ln]
    assert "unknown diagram 'barz'" in line and "no longer ships" not in line


def test_a_generator_that_raises_and_one_past_its_limit_are_coded_with_their_line(tmp_path: Path) -> None:
    project = _new(tmp_path)
    cards = project / "cards" / "examples.yaml"
    text = cards.read_text(encoding="utf-8")
    extra = CARD.replace("bars-picture", "slow-picture").replace("name: bars", "name: slow").replace("{PARAMS}", "{}")
    extra += CARD.replace("bars-picture", "broken-picture").replace("name: bars", "name: broken").replace("{PARAMS}", "{}")
    for name in ("quits", "ends"):
        extra += CARD.replace("bars-picture", f"{name}-picture").replace("name: bars", f"name: {name}").replace("{PARAMS}", "{}")
    cards.write_text(text + extra, encoding="utf-8")
    result = _deckbuild(project, "build")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (slow,) = [ln for ln in result.stderr.splitlines() if " E284 " in ln]
    assert re.match(
        r"cards/examples\.yaml:\d+:\d+: E284 card 'slow-picture': generator 'slow' \(diagrams/own\.py:17:1\) ran past its time limit of 1 s",
        slow,
    ), slow
    (broken,) = [ln for ln in result.stderr.splitlines() if " E283 " in ln and "'broken-picture'" in ln]
    assert re.match(
        r"cards/examples\.yaml:\d+:\d+: E283 card 'broken-picture': generator 'broken' raised ZeroDivisionError: ", broken
    )
    assert broken.endswith("(diagrams/own.py:27)"), broken  # the line that raised
    (quits,) = [ln for ln in result.stderr.splitlines() if "'quits-picture'" in ln]
    assert " E283 " in quits and quits.endswith("generator 'quits' raised SystemExit: 3 (diagrams/own.py:35)"), quits
    (ends,) = [ln for ln in result.stderr.splitlines() if "'ends-picture'" in ln]
    assert " E283 " in ends and "generator 'ends' (diagrams/own.py:39:1) ended the process drawing it" in ends, ends
    assert "internal error" not in result.stderr
    assert not (project / "dist").exists()


def test_a_generator_that_cannot_be_read_statically_is_coded_at_its_line(tmp_path: Path) -> None:
    project = _new(tmp_path)
    (project / "diagrams" / "odd.py").write_text(
        "from deckbuild.diagrams.api import diagram\n\n\n@diagram('odd')\ndef odd(n=len('abc')):\n    pass\n", encoding="utf-8"
    )
    result = _deckbuild(project, "check")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "diagrams/odd.py:5:11: E285 generator 'odd': parameter 'n': the default must be a literal" in result.stderr


def test_the_wheel_holds_no_decks_generators(tmp_path: Path) -> None:
    """The repository's diagrams/ is deck content: setuptools packages deckbuild* only."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert config["packages"]["find"]["include"] == ["deckbuild*"]
    assert not (root / "diagrams" / "__init__.py").exists()
    assert not any(key.startswith("diagrams") for key in config.get("package-data", {}))


def test_a_generator_file_importing_matplotlib_at_module_level_is_coded_at_the_import(tmp_path: Path) -> None:
    project = _new(tmp_path)
    source = project / "diagrams" / "own.py"
    source.write_text(
        source.read_text(encoding="utf-8").replace(
            "from deckbuild.diagrams import style\n",
            "from typing import TYPE_CHECKING\n\nimport matplotlib.pyplot as plt\n\nfrom deckbuild.diagrams import style\n"
            "\nif TYPE_CHECKING:\n    from matplotlib.figure import Figure\n",
        ),
        encoding="utf-8",
    )
    result = _deckbuild(project, "check")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = [ln for ln in result.stderr.splitlines() if " E286 " in ln]  # the TYPE_CHECKING import is fine
    assert line.startswith("diagrams/own.py:5:1: E286 generator file imports matplotlib.pyplot at module level; "), line


def test_adopt_and_import_never_create_or_run_a_generator(tmp_path: Path) -> None:
    """A generator is the author's code: only a build (or preview) runs one."""
    project = _new(tmp_path)
    assert _deckbuild(project, "build").returncode == 0
    (package,) = (project / "dist").glob("*.apkg")
    marker = tmp_path / "ran"
    (project / "diagrams" / "side.py").write_text(
        f"from deckbuild.diagrams.api import diagram\n\nopen({str(marker)!r}, 'w').close()\n\n\n"
        "@diagram('side')\ndef side():\n    raise SystemExit\n",
        encoding="utf-8",
    )
    seed = Path(__file__).resolve().parents[1] / "seeds" / "deep-learning-120.txt"
    imported = _deckbuild(project, "import", str(seed))
    assert imported.returncode == 0, imported.stderr
    adopted = subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", "adopt", str(package), str(tmp_path / "adopted")],
        capture_output=True,
        text=True,
        cwd=project,
        timeout=300,
    )
    assert adopted.returncode == 0, adopted.stderr
    assert not marker.exists()
    assert not (tmp_path / "adopted" / "diagrams").exists()
    assert sorted(p.name for p in (project / "diagrams").iterdir()) == ["curves.py", "own.py", "side.py"]
    # The adopted deck keeps the drawn pictures as plain images.
    assert [p.name for p in (tmp_path / "adopted" / "media").glob("bars-*.png")]


def test_generators_are_loaded_by_path_and_shadow_nothing(tmp_path: Path) -> None:
    """A file named like a standard module (json.py) is the project's, and diagrams/ never joins sys.path."""
    project = _new(tmp_path)
    (project / "diagrams" / "json.py").write_text(
        "import os\nimport sys\n\nfrom deckbuild.diagrams import style\nfrom deckbuild.diagrams.api import diagram\n\n\n"
        "@diagram('path-check')\ndef path_check():\n"
        "    assert 'diagrams' not in sys.modules and sys.modules['json'].__file__ != __file__\n"
        "    here = os.path.dirname(os.path.realpath(__file__))\n"
        "    assert here not in [os.path.realpath(p or '.') for p in sys.path], sys.path\n"
        "    fig = style.figure(1.0)\n    fig.text(0.5, 0.5, __name__)\n    return fig\n",
        encoding="utf-8",
    )
    cards = project / "cards" / "examples.yaml"
    cards.write_text(cards.read_text(encoding="utf-8").replace("name: bars", "name: path-check"), encoding="utf-8")
    result = _deckbuild(project, "build")
    assert result.returncode == 0, result.stderr
