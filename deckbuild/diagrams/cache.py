"""The content-addressed diagram cache: each spec's PNG, named by the hash of its bytes, found
by its cache key or drawn by the pool, checked, and written once."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from deckbuild.diagrams.keys import cache_key
from deckbuild.diagrams.pool import Job, draw_in_workers
from deckbuild.diagrams.registry import DiagramInfo
from deckbuild.diagrams.validation import DiagramError, merged_params
from deckbuild.jobs import default_jobs
from deckbuild.mediacheck import refusals
from deckbuild.model import Progress
from deckbuild.writer import atomic_write_bytes, make_folder

__all__ = ["DiagramFailures", "materialize"]


class DiagramFailures(DiagramError):
    """Generators that failed while drawing valid specs: cache key -> (code, what went wrong)."""

    def __init__(self, failures: dict[str, tuple[str, str]]) -> None:
        super().__init__("; ".join(message for _, message in failures.values()))
        self.failures = failures


def _cached(cache_dir: Path, key: str) -> Path | None:
    """The cached PNG for a key, if both its index file and the PNG exist."""
    index = cache_dir / f"{key}.txt"
    try:
        file_name = index.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    png = cache_dir / file_name
    if not file_name or "/" in file_name or not png.is_file():
        return None
    return png


def materialize(
    diagrams: Mapping[str, DiagramInfo],
    specs: Sequence[tuple[str, Mapping[str, Any] | None]],
    cache_dir: Path,
    progress: Progress | None = None,
    *,
    jobs: int | None = None,
) -> dict[str, Path]:
    """Make sure every spec has a PNG in cache_dir; return cache_key -> PNG path.

    Specs already in the cache are not rendered, and if none needs rendering matplotlib
    is never imported.  ``progress(i, n, name)`` is called as each picture is taken up
    (slowest first, the same order whatever the jobs), with i counting from 1 over the n
    diagrams that need rendering (show it as "rendering 3/24: warmup-cosine").  Raises
    DiagramError for an invalid spec before rendering anything.

    They are drawn in ``jobs`` (default: every core) worker processes that hold numpy and
    OpenBLAS to fixed kernels (NUMERIC_ENV), so a picture's bytes depend on its spec and
    the pinned library versions, not on the CPU or on which worker drew it; files are
    written here, in spec order, each after passing the media check (mediacheck.py), so a
    cached picture is never read again.  A generator that fails (or draws a picture the check
    refuses) does not stop the others: every failure is raised at the end as one
    DiagramFailures, in spec order.
    """
    cache_dir = Path(cache_dir)
    keys: dict[str, tuple[str, Mapping[str, Any] | None]] = {}
    for name, params in specs:
        keys.setdefault(cache_key(diagrams, name, params), (name, params))
    result: dict[str, Path] = {}
    todo: list[tuple[str, Job]] = []
    for key, (name, params) in keys.items():
        hit = _cached(cache_dir, key)
        if hit is None:
            todo.append((key, (diagrams[name], merged_params(diagrams, name, params))))
        else:
            result[key] = hit
    if not todo:
        return result
    make_folder(cache_dir)
    workers = min(default_jobs() if jobs is None else max(1, jobs), len(todo))
    drawn = draw_in_workers([job for _, job in todo], workers, progress)
    failures: dict[str, tuple[str, str]] = {}
    for (key, (info, _params)), outcome in zip(todo, drawn, strict=True):
        name = info.name
        if isinstance(outcome, tuple):
            failures[key] = outcome
            continue
        path = cache_dir / f"{name}-{hashlib.sha256(outcome).hexdigest()[:12]}.png"
        refused = refusals(path.name, outcome)  # checked once, as drawn: the cache holds only what passed
        if refused:
            failures[key] = ("E131", f"diagram {name!r} drew an image the media check refuses: {refused[0].short()}")
            continue
        if not path.is_file():
            atomic_write_bytes(path, outcome)
        atomic_write_bytes(cache_dir / f"{key}.txt", (path.name + "\n").encode())
        result[key] = path
    if failures:
        raise DiagramFailures(failures)
    return result
