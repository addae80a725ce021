"""No import circle in deckbuild/, between modules or between packages, read with ast.

The layer contract (pyproject.toml, run by `lint-imports` in .ci/run) says the same; this
test holds the promise even if the linter's options change.  Every import counts: at module
level, inside a function, under `if TYPE_CHECKING:` (a lazy import that dodges a circle is
still one).  A package's `__init__` is a module of its own, which Python runs before any module
of the package; at package level each
sub-package of deckbuild/ and each top-level module is one node.
"""

from __future__ import annotations

import ast
import re
import textwrap
import tomllib
from collections.abc import Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "deckbuild"


def module_files(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under the package (its __init__ as the package)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _target(name: str, modules: Mapping[str, Path]) -> str | None:
    """The deepest module of `name` that exists (an attribute import lands on its module)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, anywhere in its file."""
    modules = module_files(package)
    root = package.name
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            wanted: list[str] = []
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    origin = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    origin = node.module or ""
                wanted = [f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in modules else origin for alias in node.names]
            for imported in wanted:
                if imported == root or imported.startswith(root + "."):
                    target = _target(imported, modules)
                    if target is not None and target != name:
                        graph[name].add(target)
    return graph


def with_packages_run(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """The graph plus an edge from each module to its package: Python runs a package's
    `__init__` before any module in it, so an `__init__` that imports one of its own modules
    (a re-export) closes a circle with it."""
    out = {name: set(imported) for name, imported in graph.items()}
    for name in graph:
        parent = name.rpartition(".")[0]
        if parent in graph:
            out[name].add(parent)
    return out


def package_graph(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """The same graph with each sub-package and each top-level module as one node."""

    def unit(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else parts[0]

    out: dict[str, set[str]] = {unit(m): set() for m in graph}
    for module, imported in graph.items():
        out[unit(module)].update(unit(i) for i in imported if unit(i) != unit(module))
    return out


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_circle_between_modules() -> None:
    assert circles(with_packages_run(import_graph(PACKAGE))) == []


def test_no_circle_between_packages() -> None:
    assert circles(package_graph(import_graph(PACKAGE))) == []


def test_the_check_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    """A circle closed only by a function-local import, or only under TYPE_CHECKING, is found."""
    pkg = tmp_path / "deckbuild"
    (pkg / "low").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "top.py": "from deckbuild.low import base\n",
        "low/__init__.py": "",
        "low/base.py": """
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from deckbuild.top import Thing
        """,
        "low/other.py": """
            def later():
                from . import base
        """,
        "low/more.py": "from deckbuild.low.other import later\nfrom .base import x\n",
        "side.py": "def f():\n    from deckbuild import top\n",
        "back.py": "import deckbuild.side\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(textwrap.dedent(text))
    (pkg / "low" / "base.py").write_text((pkg / "low" / "base.py").read_text() + "def g():\n    from deckbuild.low import more\n")
    graph = import_graph(pkg)
    assert graph["deckbuild.top"] == {"deckbuild.low.base"}
    assert graph["deckbuild.low.other"] == {"deckbuild.low.base"}
    assert graph["deckbuild.back"] == {"deckbuild.side"}
    assert circles(graph) == [["deckbuild.low.base", "deckbuild.low.more", "deckbuild.low.other", "deckbuild.top"]]
    assert circles(package_graph(graph)) == [["low", "top"]]


def test_the_check_sees_a_package_that_re_exports_its_own_module(tmp_path: Path) -> None:
    """`__init__` importing a module of its package is a circle, even if that module imports nothing."""
    pkg = tmp_path / "deckbuild"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("from deckbuild.low.base import x\n")
    (pkg / "low" / "base.py").write_text("x = 1\n")
    (pkg / "top.py").write_text("from deckbuild.low.base import x\n")
    graph = import_graph(pkg)
    assert circles(graph) == []
    assert circles(with_packages_run(graph)) == [["deckbuild.low", "deckbuild.low.base"]]
    (pkg / "low" / "__init__.py").write_text('"""A docstring, no import."""\n')
    assert circles(with_packages_run(import_graph(pkg))) == []


ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def test_the_architecture_page_shows_the_contracts_layers() -> None:
    contracts = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [c["layers"] for c in contracts["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    page = ARCHITECTURE.read_text(encoding="utf-8")
    drawn = page.split("## Layers, top to bottom", 1)[1].split("```")[1].strip().splitlines()
    assert drawn == layers


def test_the_architecture_page_gives_every_modules_job() -> None:
    page = ARCHITECTURE.read_text(encoding="utf-8").split("## Modules and their jobs", 1)[1]
    named = set(re.findall(r"`([a-z_/]+\.py)`", page))
    present = {path.relative_to(PACKAGE).as_posix() for path in module_files(PACKAGE).values()}
    assert sorted(present - named) == [], "modules the page does not name"
    assert sorted(named - present) == [], "modules the page names that do not exist"
