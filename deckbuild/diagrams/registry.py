"""The registry of a project's diagrams: every generator under its `diagrams/` folder, read
statically (ast) from the source, so checking a deck never imports matplotlib or runs the
project's code.

A generator is a module-level function decorated with ``@diagram("name", ...)`` (api.py)
whose parameters all have literal defaults; the decorator's keywords (title, illustrative,
cost, time_limit) are literals too.  What cannot be read that way is a Problem (E285).
A generator file imports no matplotlib at module level (E286): deckbuild's house style
(deckbuild.diagrams.style) makes its figure, and the module's own imports of matplotlib
belong inside the functions that draw, so that loading the file sets nothing up behind
the style's back (a backend, pyplot's global state).
"""

from __future__ import annotations

import ast
import hashlib
import json
import operator
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from deckbuild.errors import Location, Problem
from deckbuild.layout import DIAGRAMS_DIR

__all__ = ["DEFAULT_TIME_LIMIT", "MOVED", "DiagramInfo", "Registry", "project_registry", "scan"]

DEFAULT_TIME_LIMIT = 60.0
"""Seconds a generator may draw for before the build gives up on it (E284)."""

_TYPES = {"int": int, "float": float, "bool": bool, "str": str}

MOVED = frozenset(
    [
        "warmup-cosine",
        "one-cycle",
        "lr-range-test",
        "lr-too-small-large",
        "lr-batch-scaling",
        "double-descent",
        "grokking",
        "weight-ema",
        "early-stopping",
        "train-above-val",
        "activations",
        "vanishing-exploding",
        "conv-output-size",
        "receptive-field",
        "grouped-conv",
        "norm-axes",
        "batch-stat-noise",
        "grad-clipping",
        "float-formats",
        "loss-scaling",
        "zero-memory",
        "chinchilla",
        "attention-masks",
        "attention-scaling",
        "cosine-restarts",
        "inverted-dropout",
        "stochastic-depth",
        "label-smoothing",
        "sharp-flat-minima",
        "temperature",
        "accuracy-paradox",
        "lstm-forget",
        "init-signal",
        "critical-batch",
        "attention-memory",
        "broadcasting-bug",
        "padding-loss",
        "finite-difference",
        "truncated-bptt",
        "grad-accumulation",
        "fgsm-pgd",
    ]
)
"""The generators deckbuild once shipped inside its package; now the shipped deck's own (its diagrams/)."""


@dataclass(frozen=True)
class DiagramInfo:
    """What deckbuild knows about one generator without importing it."""

    name: str
    title: str
    source: Path
    """The generator's file (absolute); its bytes are part of the cache key."""
    function: str
    defaults: dict[str, Any] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    """Each parameter's type name (int, float, bool, str): its annotation, else its default's."""
    illustrative: bool = False
    """True when the picture uses values that are not in the seeds (the caption says so)."""
    cost: int = 100
    """About how many milliseconds of CPU drawing it takes: the workers take the slowest first."""
    time_limit: float = DEFAULT_TIME_LIMIT
    where: Location = field(default_factory=lambda: Location("", 0, 0))
    """The generator's `def`, as the project names it (diagrams/x.py:line:col)."""


@dataclass(frozen=True)
class Registry:
    """A project's generators by name, and what in its diagrams/ folder could not be read."""

    diagrams: Mapping[str, DiagramInfo]
    problems: tuple[Problem, ...] = ()


def _decorator(node: ast.FunctionDef) -> ast.Call | None:
    for dec in node.decorator_list:
        if isinstance(dec, ast.Call):
            func = dec.func
            if (isinstance(func, ast.Name) and func.id == "diagram") or (
                isinstance(func, ast.Attribute) and func.attr == "diagram"
            ):
                return dec
    return None


def _literal(node: ast.expr) -> Any:
    return ast.literal_eval(node)


def _read_generator(path: Path, rel: str, node: ast.FunctionDef, call: ast.Call) -> DiagramInfo:
    """One decorated function as a DiagramInfo; ValueError (with the node) when not literal."""
    if len(call.args) != 1 or not isinstance(call.args[0], ast.Constant) or not isinstance(call.args[0].value, str):
        raise _Unreadable(call, '@diagram(...) takes the diagram\'s name as one string, e.g. @diagram("my-plot")')
    name = call.args[0].value
    options: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg not in ("title", "illustrative", "cost", "time_limit"):
            raise _Unreadable(kw.value, f"@diagram: unknown keyword {kw.arg!r}; accepted: title, illustrative, cost, time_limit")
        try:
            options[kw.arg] = _literal(kw.value)
        except ValueError:
            raise _Unreadable(kw.value, f"@diagram: {kw.arg}= must be a literal value") from None
    args = node.args
    if args.vararg or args.kwarg or args.posonlyargs:
        raise _Unreadable(node, f"generator {name!r}: parameters must be plain names with defaults (no *args, **kwargs, /)")
    params = [*args.args, *args.kwonlyargs]
    defaults_nodes = [*([None] * (len(args.args) - len(args.defaults))), *args.defaults, *args.kw_defaults]
    defaults: dict[str, Any] = {}
    types: dict[str, str] = {}
    for arg, default in zip(params, defaults_nodes, strict=True):
        if default is None:
            raise _Unreadable(arg, f"generator {name!r}: parameter {arg.arg!r} needs a default value")
        try:
            value = _literal(default)
        except ValueError:
            raise _Unreadable(default, f"generator {name!r}: parameter {arg.arg!r}: the default must be a literal") from None
        annotation = arg.annotation
        kind = annotation.id if isinstance(annotation, ast.Name) else type(value).__name__
        if kind not in _TYPES:
            raise _Unreadable(arg, f"generator {name!r}: parameter {arg.arg!r} must be int, float, bool or str, not {kind}")
        defaults[arg.arg] = value
        types[arg.arg] = kind
    return DiagramInfo(
        name=name,
        title=str(options.get("title", name)),
        source=path,
        function=node.name,
        defaults=defaults,
        types=types,
        illustrative=bool(options.get("illustrative", False)),
        cost=int(options.get("cost", 100)),
        time_limit=float(options.get("time_limit", DEFAULT_TIME_LIMIT)),
        where=Location(rel, node.lineno, node.col_offset + 1),
    )


class _Unreadable(Exception):
    """A generator that cannot be read statically, at the node that says why."""

    def __init__(self, node: ast.AST, message: str) -> None:
        super().__init__(message)
        self.node = node
        self.message = message


def _scan_file(path: Path, rel: str, source: bytes) -> tuple[list[DiagramInfo], list[Problem]]:
    try:
        tree = ast.parse(source, filename=rel)
    except SyntaxError as exc:
        where = Location(rel, exc.lineno or 1, exc.offset or 1)
        return [], [Problem(where, "E285", f"generator file does not parse: {exc.msg}; fix the Python syntax")]
    except ValueError as exc:
        return [], [Problem(Location(rel, 1, 1), "E285", f"generator file cannot be read: {exc}")]
    found: list[DiagramInfo] = []
    problems = [
        Problem(
            Location(rel, node.lineno, node.col_offset + 1),
            "E286",
            f"generator file imports {module} at module level; deckbuild makes the figure"
            " (deckbuild.diagrams.style.figure): import what a generator needs from matplotlib"
            " inside the function, or under `if TYPE_CHECKING:` for annotations",
        )
        for node, module in _module_level_imports(tree.body)
        if module == "matplotlib" or module.startswith(("matplotlib.", "mpl_toolkits"))
    ]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and (call := _decorator(node)) is not None:
            try:
                found.append(_read_generator(path, rel, node, call))
            except _Unreadable as exc:
                line, col = getattr(exc.node, "lineno", node.lineno), getattr(exc.node, "col_offset", 0) + 1
                problems.append(Problem(Location(rel, line, col), "E285", exc.message))
    return found, problems


def _module_level_imports(body: list[ast.stmt]) -> list[tuple[ast.stmt, str]]:
    """Every import that runs when the module is loaded, with the module it names (inside
    `if`, `try` and `with` too; not under `if TYPE_CHECKING:`, which never runs)."""
    found: list[tuple[ast.stmt, str]] = []
    for node in body:
        if isinstance(node, ast.Import):
            found += [(node, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node, node.module))
        elif isinstance(node, ast.If):
            test = node.test
            checking = (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
            )
            found += _module_level_imports(node.orelse if checking else [*node.body, *node.orelse])
        elif isinstance(node, ast.Try):
            found += _module_level_imports([*node.body, *node.orelse, *node.finalbody])
            for handler in node.handlers:
                found += _module_level_imports(handler.body)
        elif isinstance(node, ast.With):
            found += _module_level_imports(node.body)
    return found


class ScanStore(Protocol):
    """Where a build keeps each generator file's scan between processes (incremental/cache.py)."""

    def file_entries(self, keys: Iterable[bytes], table: Literal["generators"]) -> dict[bytes, str]: ...

    def store_file_entries(self, entries: Mapping[bytes, str], table: Literal["generators"]) -> None: ...


def scan(folder: Path, root: Path, store: ScanStore | None = None) -> Registry:
    """Every generator in folder/*.py (sorted by file), names relative to root.

    `store`: the scans of files whose bytes an earlier build read, taken back instead of
    parsed (reading a project's generators with ast is a fifth of a small deck's rebuild).
    """
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".py" and p.is_file())
    except OSError:
        return Registry({})
    read: list[tuple[Path, str, bytes | str, bytes]] = []  # each file's bytes, or why it cannot be read
    for path in files:
        rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()
        resolved = path.resolve()
        try:
            source: bytes | str = resolved.read_bytes()
        except OSError as exc:
            source = str(exc)
        read.append((resolved, rel, source, _scan_key(resolved, rel, source) if isinstance(source, bytes) else b""))
    kept = store.file_entries([key for *_f, key in read if key], "generators") if store is not None else {}
    fresh: dict[bytes, str] = {}
    diagrams: dict[str, DiagramInfo] = {}
    problems: list[Problem] = []
    for resolved, rel, source, key in read:
        if isinstance(source, str):
            problems.append(Problem(Location(rel, 1, 1), "E285", f"generator file cannot be read: {source}"))
            continue
        scanned = _decode_scan(kept[key], resolved, rel) if key in kept else None
        if scanned is None:
            scanned = _scan_file(resolved, rel, source)
            if (text := _encode_scan(*scanned)) is not None:
                fresh[key] = text
        found, file_problems = scanned
        problems += file_problems
        for info in found:
            if info.name in diagrams:
                first = diagrams[info.name].where
                problems.append(
                    Problem(
                        info.where,
                        "E285",
                        f"generator {info.name!r} is also defined at {first}; give each generator its own name",
                    )
                )
                continue
            diagrams[info.name] = info
    if store is not None and fresh:
        store.store_file_entries(fresh, "generators")
    return Registry(diagrams, tuple(problems))


# -- a generator file's scan as the build cache keeps it (JSON: it can only ever hold data)


def _scan_key(path: Path, rel: str, source: bytes) -> bytes:
    """The file's scan depends on its bytes and on the names it is read under (DiagramInfo)."""
    names = f"generators\0{path}\0{rel}\0".encode()
    return hashlib.blake2b(names + source, digest_size=16).digest()


_PLAIN = (str, int, float, bool)
_KEPT_FIELDS = operator.attrgetter("name", "title", "function", "defaults", "types", "illustrative", "cost", "time_limit")


def _encode_scan(found: list[DiagramInfo], problems: list[Problem]) -> str | None:
    """None if a value would not come back from JSON as it is (a default of another type)."""
    if any(not all(type(v) in _PLAIN for v in info.defaults.values()) for info in found):
        return None
    if any(p.severity != "error" or p.subject for p in problems):  # kept as errors, without a subject
        return None
    return json.dumps(
        {
            "found": [[*_KEPT_FIELDS(i), i.where.line, i.where.col] for i in found],
            "problems": [[p.location.line, p.location.col, p.code, p.message] for p in problems],
        }
    )


def _decode_scan(text: str, path: Path, rel: str) -> tuple[list[DiagramInfo], list[Problem]] | None:
    """The scan _encode_scan wrote, or None if the text is not one (then the file is read again)."""
    try:
        data = json.loads(text)
        found = []
        for name, title, function, defaults, types, illustrative, cost, time_limit, line, col in data["found"]:
            texts = (name, title, function, *defaults, *types, *types.values())
            if not all(type(v) is str for v in texts) or not all(type(v) in _PLAIN for v in defaults.values()):
                return None
            if type(illustrative) is not bool or type(cost) is not int or type(time_limit) is not float:
                return None
            found.append(
                DiagramInfo(name, title, path, function, defaults, types, illustrative, cost, time_limit, _at(rel, line, col))
            )
        problems = []
        for line, col, code, message in data["problems"]:
            if not all(type(v) is str for v in (code, message)):
                return None
            problems.append(Problem(_at(rel, line, col), code, message))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return found, problems


def _at(rel: str, line: object, col: object) -> Location:
    if type(line) is not int or type(col) is not int:
        raise TypeError("a location's line and column are numbers")
    return Location(rel, line, col)


def _signature(folder: Path) -> tuple[tuple[str, int, int], ...]:
    try:
        with os.scandir(folder) as entries:
            return tuple(sorted((e.name, e.stat().st_mtime_ns, e.stat().st_size) for e in entries if e.name.endswith(".py")))
    except OSError:
        return ()


_RECENT: dict[tuple[Path, Path, tuple[tuple[str, int, int], ...]], Registry] = {}


def project_registry(root: Path, store: ScanStore | None = None) -> Registry:
    """The generators of the project at root (its diagrams/ folder), read once per content in
    a process (serve plans again and again), and through `store` once per content at all."""
    folder = Path(root) / DIAGRAMS_DIR
    key = (folder, Path(root), _signature(folder))
    registry = _RECENT.get(key)
    if registry is None:
        registry = scan(folder, Path(root), store)
        if len(_RECENT) >= 8:
            del _RECENT[next(iter(_RECENT))]
        _RECENT[key] = registry
    return registry
