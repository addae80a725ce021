"""Cache keys: a hash of everything that decides a diagram's pixels, computed from the
generators' source bytes and installed versions, never by importing them."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from deckbuild.diagrams.registry import REGISTRY
from deckbuild.diagrams.validation import merged_params

__all__ = ["cache_key"]

_PACKAGE_DIR = Path(__file__).resolve().parent
_SHARED_MODULES = ("_style",)
"""Modules whose source is part of every cache key (the look of every diagram)."""


@functools.cache
def _installed_version(dist: str) -> str:
    """A distribution's version without importing it (importing matplotlib is slow).

    Cached: reading package metadata costs ~7 ms, and a deck asks once per diagram.
    """
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not-installed"


@functools.cache
def module_source(module: str) -> bytes:
    """A generator module's source, read once per process."""
    return (_PACKAGE_DIR / f"{module}.py").read_bytes()


def cache_key(name: str, params: Mapping[str, Any] | None = None) -> str:
    """A sha256 hex key for everything that determines a diagram's pixels.

    Covers the name, the effective parameters, the source of the generator module and
    of the shared style, and the installed matplotlib and numpy versions: any of them
    changing means the cached picture may be stale.
    """
    merged = merged_params(name, params)
    info = REGISTRY[name]
    h = hashlib.sha256()
    h.update(b"deckbuild-diagram-v2\x00")  # v2: drawn with NUMERIC_ENV
    h.update(name.encode() + b"\x00")
    h.update(json.dumps(merged, sort_keys=True, separators=(",", ":")).encode() + b"\x00")
    for module in (info.module, *_SHARED_MODULES):
        h.update(module_source(module) + b"\x00")
    for dist in ("matplotlib", "numpy"):
        h.update(f"{dist}=={_installed_version(dist)}\x00".encode())
    return h.hexdigest()
