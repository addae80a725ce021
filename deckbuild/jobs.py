"""How many worker processes a build may use: the one default of `--jobs`.

Card files are parsed (incremental/parallel.py) and diagrams drawn (diagrams/) in worker
processes; both default to the same number.  Standard library only: the up-to-date check
and `deckbuild --help` import the modules that import this one.
"""

from __future__ import annotations

import os


def default_jobs() -> int:
    """The cores this process may run on (what `--jobs` defaults to)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
