"""Tests for the diagram stage: cheap imports, validation, cache keys, byte-identical
renders, and no-op rebuilds that never import matplotlib."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

from deckbuild.diagrams import keys as diagram_keys
from deckbuild.diagrams.cache import DiagramFailures, materialize
from deckbuild.diagrams.registry import project_registry, scan
from deckbuild.diagrams.validation import DiagramError
from deckbuild.diagrams.validation import validate as validate_in

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = project_registry(ROOT).diagrams
"""The shipped deck's generators, in the repository's diagrams/ folder."""


def validate(name: str, params=None) -> list[str]:  # noqa: ANN001
    """The messages validate() gives for a spec of the shipped deck."""
    return [message for _code, message in validate_in(REGISTRY, name, params)]


def cache_key(name: str, params=None) -> str:  # noqa: ANN001
    return diagram_keys.cache_key(REGISTRY, name, params)


# A sample covering every kind of drawing the generators use (lines, seeded random
# data, histograms, patches and arrows, imshow, 3-D voxels, log axes) while staying
# cheap, so the file runs well under a minute on a busy 2-core machine. Set
# DECKBUILD_ALL_DIAGRAMS=1 to run the same checks on every registered diagram.
SAMPLE = [
    "warmup-cosine",
    "batch-stat-noise",
    "grad-clipping",
    "attention-masks",
    "norm-axes",
    "loss-scaling",
    "lr-batch-scaling",
]
BUILD_NAMES = list(REGISTRY) if os.environ.get("DECKBUILD_ALL_DIAGRAMS") else SAMPLE

# Runs materialize() in a fresh interpreter and reports what it returned, what it
# rendered, and whether matplotlib/numpy got imported.
_BUILD = """
import json, sys
from pathlib import Path
from deckbuild.diagrams.cache import materialize
from deckbuild.diagrams.registry import project_registry
calls = []
paths = materialize(project_registry(Path.cwd()).diagrams, [(n, None) for n in json.loads(sys.argv[2])], Path(sys.argv[1]),
                    progress=lambda i, n, name: calls.append([i, n, name]),
                    jobs=json.loads(sys.argv[3]))
print(json.dumps({
    "paths": {k: str(p) for k, p in paths.items()},
    "calls": calls,
    "matplotlib": "matplotlib" in sys.modules,
    "numpy": "numpy" in sys.modules,
}))
"""


def _start_build(cache_dir: Path, jobs: int | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _BUILD, str(cache_dir), json.dumps(BUILD_NAMES), json.dumps(jobs)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str]) -> dict:
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0
    return json.loads(out)


@pytest.fixture(scope="module")
def two_clean_builds(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict, Path, dict]:
    """Two independent clean builds in separate interpreters, run side by side:
    a serial one (jobs=1) and one drawing in 2 worker processes."""
    a, b = tmp_path_factory.mktemp("build-a"), tmp_path_factory.mktemp("build-b")
    procs = [_start_build(a, jobs=1), _start_build(b, jobs=2)]
    ra, rb = (_finish(p) for p in procs)
    return a, ra, b, rb


def test_import_does_not_load_matplotlib_or_numpy() -> None:
    code = "import deckbuild.diagrams, sys; assert 'matplotlib' not in sys.modules and 'numpy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_registry_read_statically_matches_the_loaded_generators() -> None:
    """What ast read (names, defaults) is what the generators take once loaded and run."""
    code = (
        "import inspect, json, sys\n"
        "from pathlib import Path\n"
        "from deckbuild.diagrams.registry import project_registry\n"
        "from deckbuild.diagrams.rendering import load_generator\n"
        "out = {}\n"
        "for info in project_registry(Path.cwd()).diagrams.values():\n"
        "    fn = load_generator(info)\n"
        "    assert fn.__deckbuild_diagram__ == info.name\n"
        "    out[info.name] = {k: p.default for k, p in inspect.signature(fn).parameters.items()}\n"
        "print(json.dumps(out))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == {name: info.defaults for name, info in REGISTRY.items()}
    assert not (ROOT / "diagrams" / "__pycache__").exists()  # loaded by path, no bytecode left in the project


def test_the_shipped_deck_has_its_41_generators_and_the_package_none() -> None:
    assert len(REGISTRY) == 41 and project_registry(ROOT).problems == ()
    package = ROOT / "deckbuild" / "diagrams"
    assert scan(package, ROOT).diagrams == {}  # the engine only: no deck's generator
    assert not any(p.name in {"schedules.py", "networks.py"} for p in package.glob("*.py"))
    for name, info in REGISTRY.items():
        assert info.name == name and info.title


def test_validate_accepts_good_specs() -> None:
    assert validate("warmup-cosine", {}) == []
    assert validate("warmup-cosine", None) == []
    assert validate("warmup-cosine", {"warmup": 500, "accumulation_bug": True}) == []
    assert validate("one-cycle", {"div": 10}) == []  # an int is fine for a float


def test_validate_unknown_diagram_lists_known_names() -> None:
    (problem,) = validate("warmup-cosin", {})
    assert "unknown diagram 'warmup-cosin'" in problem
    assert "warmup-cosine" in problem and "attention-masks" in problem


def test_validate_unknown_parameter_lists_accepted_ones() -> None:
    (problem,) = validate("warmup-cosine", {"warm_up": 3})
    assert "unknown parameter 'warm_up'" in problem
    assert "accumulation_bug, total, warmup" in problem
    (problem,) = validate("grokking", {"x": 1})
    assert "accepted parameters: none" in problem


def test_validate_wrong_types() -> None:
    assert "must be int, not str" in validate("warmup-cosine", {"warmup": "1000"})[0]
    assert "must be bool, not int" in validate("warmup-cosine", {"accumulation_bug": 1})[0]
    assert "must be int, not bool" in validate("warmup-cosine", {"warmup": True})[0]
    assert "must be int, not float" in validate("warmup-cosine", {"warmup": 1.5})[0]
    assert "params must be a mapping" in validate("warmup-cosine", [1])[0]  # type: ignore[arg-type]


def test_cache_key_depends_on_parameters_only_through_their_effective_values() -> None:
    base = cache_key("warmup-cosine", {})
    assert cache_key("warmup-cosine", None) == base
    assert cache_key("warmup-cosine", {"warmup": 1000}) == base  # the default, spelled out
    assert cache_key("warmup-cosine", {"warmup": 500}) != base
    assert cache_key("warmup-cosine", {"accumulation_bug": True}) != base
    assert cache_key("one-cycle", {}) != base
    assert cache_key("one-cycle", {"div": 10}) == cache_key("one-cycle", {"div": 10.0})
    assert re.fullmatch(r"[0-9a-f]{64}", base), base


def test_cache_key_covers_generator_source_and_matplotlib_version(monkeypatch) -> None:
    base = cache_key("warmup-cosine", {})
    monkeypatch.setattr(diagram_keys, "_installed_version", lambda dist: "0.0")
    assert cache_key("warmup-cosine", {}) != base
    monkeypatch.undo()
    real_read = Path.read_bytes
    monkeypatch.setattr(
        Path,
        "read_bytes",
        lambda self: real_read(self) + (b"#" if self.name == "style.py" else b""),
    )
    diagram_keys._read.cache_clear()  # sources are read once per version of the file
    try:
        assert cache_key("warmup-cosine", {}) != base
    finally:
        diagram_keys._read.cache_clear()


def test_cache_keys_read_the_installed_versions_without_importing_them_or_importlib_metadata() -> None:
    """The versions in every key are the ones importlib.metadata reports, read from the wheels'
    .dist-info folder names: a rebuild's keys cost neither matplotlib's import nor metadata's."""
    code = (
        "import sys\n"
        "from deckbuild.diagrams import keys\n"
        "print(keys._installed_version('matplotlib'), keys._installed_version('numpy'),"
        " sorted(m for m in ('matplotlib', 'numpy', 'importlib.metadata') if m in sys.modules))\n"
        "from importlib import metadata\n"
        "print(metadata.version('matplotlib'), metadata.version('numpy'), [])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    ours, theirs = out.stdout.splitlines()
    assert ours == theirs, out.stdout


def test_invalid_spec_raises_before_rendering(tmp_path: Path) -> None:
    with pytest.raises(DiagramError, match="unknown diagram"):
        materialize(REGISTRY, [("nope", {})], tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_serial_and_parallel_clean_builds_are_byte_identical(two_clean_builds) -> None:
    _a, ra, _b, rb = two_clean_builds
    # Both drew in worker processes with fixed numeric kernels, never in the building process.
    assert ra["matplotlib"] is False
    assert rb["matplotlib"] is False
    assert ra["paths"].keys() == rb["paths"].keys()
    assert len(ra["paths"]) == len(BUILD_NAMES)
    for key, pa in ra["paths"].items():
        pb = Path(rb["paths"][key])
        assert Path(pa).name == pb.name  # the name carries the content hash
        assert Path(pa).read_bytes() == pb.read_bytes(), pa


def test_rendered_files_are_named_by_content_and_sized_for_phones(
    two_clean_builds,
) -> None:
    from PIL import Image

    _a, ra, _b, _rb = two_clean_builds

    for path in map(Path, ra["paths"].values()):
        data = path.read_bytes()
        name, digest = path.stem.rsplit("-", 1)
        assert name in REGISTRY
        assert digest == hashlib.sha256(data).hexdigest()[:12]
        with Image.open(path) as im:
            assert im.width == 720
            assert im.getpixel((0, 0))[:3] == (255, 255, 255)  # white: inverts to black
        assert b"Software" not in data  # no version stamp in the bytes


def test_progress_called_once_per_rendered_diagram(two_clean_builds) -> None:
    _a, ra, _b, rb = two_clean_builds
    n = len(BUILD_NAMES)
    # As the pictures are taken up: the slowest first (by their registered cost), ties in spec order.
    slowest_first = sorted(BUILD_NAMES, key=lambda name: -REGISTRY[name].cost)
    assert slowest_first != BUILD_NAMES
    assert ra["calls"] == [[i, n, name] for i, name in enumerate(slowest_first, start=1)]
    assert rb["calls"] == ra["calls"]  # the same order when drawn in parallel


def test_noop_rebuild_imports_nothing_and_renders_nothing(two_clean_builds) -> None:
    a, ra, b, rb = two_clean_builds
    parallel_again = _finish(_start_build(b, jobs=2))
    assert parallel_again["calls"] == [] and parallel_again["matplotlib"] is False
    assert parallel_again["paths"] == rb["paths"]
    before = {p: p.stat().st_mtime_ns for p in a.iterdir()}
    again = _finish(_start_build(a))
    assert again["paths"] == ra["paths"]
    assert again["calls"] == []
    assert again["matplotlib"] is False and again["numpy"] is False
    assert {p: p.stat().st_mtime_ns for p in a.iterdir()} == before


def test_changed_parameters_give_a_new_file_name(tmp_path: Path) -> None:
    calls: list[tuple[int, int, str]] = []
    specs = [("warmup-cosine", {}), ("warmup-cosine", {"accumulation_bug": True})]
    out = materialize(REGISTRY, specs, tmp_path, progress=lambda *c: calls.append(c))
    names = {p.name for p in out.values()}
    assert len(names) == 2 and all(n.startswith("warmup-cosine-") for n in names)
    assert calls == [(1, 2, "warmup-cosine"), (2, 2, "warmup-cosine")]
    # Only the new spec is rendered when one is added next to cached ones.
    calls.clear()
    specs.append(("warmup-cosine", {"warmup": 2000}))
    out2 = materialize(REGISTRY, specs, tmp_path, progress=lambda *c: calls.append(c))
    assert calls == [(1, 1, "warmup-cosine")]
    assert len({p.name for p in out2.values()}) == 3


def test_lost_png_is_rendered_again(tmp_path: Path) -> None:
    (path,) = materialize(REGISTRY, [("grad-clipping", {})], tmp_path).values()
    data = path.read_bytes()
    path.unlink()
    (again,) = materialize(REGISTRY, [("grad-clipping", {})], tmp_path).values()
    assert again == path and again.read_bytes() == data


def test_shipped_deck_shows_at_least_20_diagrams(shipped_collection) -> None:
    """Every referenced image is in Anki's media folder after import; >= 20 distinct diagrams.

    A figure is a registered diagram under its content name, or a hand-made image from
    media/ under the name the build record says it shipped with.
    """
    import json
    import re
    from pathlib import Path

    from ankiutil import notes_by_card_id
    from golden import REPO

    handmade = {entry["name"] for entry in json.loads((REPO / "deckbuild.lock").read_text("utf-8")).get("media", {}).values()}
    media = Path(shipped_collection.media.dir())
    shown: dict[str, list[str]] = {}
    for card_id, note in notes_by_card_id(shipped_collection).items():
        for src in re.findall(r'<img[^>]* src="([^"]+)"', note["Figure"]):
            assert (media / src).is_file(), (card_id, src)
            assert re.search(r'alt="[^"]{20,}"', note["Figure"]), card_id
            if src in handmade:
                continue
            diagram = re.fullmatch(r"(.+)-[0-9a-f]{12}\.png", src)
            assert diagram is not None and diagram.group(1) in REGISTRY, (card_id, src)
            shown.setdefault(diagram.group(1), []).append(card_id)
    assert len(shown) >= 20


def test_generator_failures_are_all_reported_in_spec_order(tmp_path: Path) -> None:
    """Valid specs whose generators raise: the others are still drawn, then one error."""
    specs = [
        ("label-smoothing", {"classes": 0}),
        ("grad-clipping", {}),
        ("zero-memory", {"gpus": 0}),
        ("warmup-cosine", {}),
    ]
    for jobs in (1, 2):
        cache = tmp_path / f"jobs{jobs}"
        with pytest.raises(DiagramFailures) as caught:
            materialize(REGISTRY, specs, cache, jobs=jobs)
        failures = caught.value.failures
        assert list(failures) == [cache_key(*specs[0]), cache_key(*specs[2])]
        code, message = failures[cache_key(*specs[2])]
        assert code == "E283" and "ZeroDivisionError" in message and "(diagrams/systems.py:" in message
        assert len(list(cache.glob("*.png"))) == 2  # the good ones are cached


def test_diagram_workers_hold_numpy_to_fixed_kernels() -> None:
    """The drawing workers' numpy runs its baseline kernels whatever the CPU (x86-64)."""
    code = (
        "import platform, sys\n"
        "from deckbuild.diagrams import pool\n"
        "pool.start_worker()\n"
        "import numpy\n"
        "from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__\n"
        "if platform.machine().lower() in ('x86_64', 'amd64'):\n"
        "    assert not [f for f in __cpu_dispatch__ if __cpu_features__[f]], __cpu_features__\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
    refused = subprocess.run(
        [sys.executable, "-c", "import numpy\nfrom deckbuild.diagrams import pool\npool.start_worker()"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    expect_refusal = platform.machine().lower() in ("x86_64", "amd64")
    assert (refused.returncode != 0) == expect_refusal, refused.stderr
