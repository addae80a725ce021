"""Cache keys: a hash of everything that decides a diagram's pixels, computed from the
generators' source bytes and installed versions, never by importing them."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deckbuild.diagrams.registry import DiagramInfo
from deckbuild.diagrams.validation import merged_params

__all__ = ["cache_key"]

_STYLE = Path(__file__).resolve().parent / "style.py"
"""The house style, whose source is part of every cache key (the look of every diagram)."""


@functools.cache
def _installed_version(dist: str) -> str:
    """A distribution's version without importing it (importing matplotlib is slow).

    Read from the name of the .dist-info folder its wheel installed beside the package
    ("numpy-2.1.3.dist-info"); importlib.metadata only when there is not exactly one: importing
    it (9 ms) and asking it (5 ms) cost more than the rest of a rebuild's diagram stage.
    Cached: a deck asks once per diagram.
    """
    spec = importlib.util.find_spec(dist)  # locates the package, imports nothing of it
    if spec is not None and spec.origin is not None:
        found = list(Path(spec.origin).parent.parent.glob(f"{dist}-*.dist-info"))
        if len(found) == 1:
            return found[0].name[len(dist) + 1 : -len(".dist-info")]
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not-installed"


def module_source(path: Path) -> bytes:
    """A generator file's source, read once per version of the file (serve keeps running)."""
    st = path.stat()
    return _read(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _read(path: Path, mtime_ns: int, size: int) -> bytes:
    return path.read_bytes()


def cache_key(diagrams: Mapping[str, DiagramInfo], name: str, params: Mapping[str, Any] | None = None) -> str:
    """A sha256 hex key for everything that determines a diagram's pixels.

    Covers the name, the effective parameters, the source of the generator module and
    of the house style, and the installed matplotlib and numpy versions: any of them
    changing means the cached picture may be stale.
    """
    merged = merged_params(diagrams, name, params)
    info = diagrams[name]
    h = hashlib.sha256()
    h.update(b"deckbuild-diagram-v3\x00")  # v3: a project's generator file
    h.update(name.encode() + b"\x00")
    h.update(json.dumps(merged, sort_keys=True, separators=(",", ":")).encode() + b"\x00")
    h.update(info.function.encode() + b"\x00" + str(info.illustrative).encode() + b"\x00")
    for path in (info.source, _STYLE):
        h.update(module_source(path) + b"\x00")
    for dist in ("matplotlib", "numpy"):
        h.update(f"{dist}=={_installed_version(dist)}\x00".encode())
    return h.hexdigest()
