"""What `deckbuild serve`'s live-reload script waits on, and how a failed rebuild is said."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deckbuild.errors import DeckbuildError

Echo = Callable[[str], None]
POLL_SECONDS = 20.0


@dataclass
class State:
    """What the live-reload script waits on: the good site's version and the current problems."""

    version: int = 0  # bumped by every successful rebuild
    seq: int = 0  # bumped by every rebuild, good or bad, and when its package is written
    problems: list[str] = field(default_factory=list)
    package: Path | None = None  # the last complete package, which the download link serves
    packaging: bool = False  # the pages are published, their package is being written
    saved: tuple[str, ...] = ()  # the card pages the last good save changed (none for a full redraw)
    changed: threading.Condition = field(default_factory=threading.Condition)
    stopping: bool = False

    def publish(self, ok: bool, problems: list[str], saved: tuple[str, ...] = ()) -> None:
        with self.changed:
            if ok:
                self.version += 1
                self.packaging = True
                self.saved = saved
            self.seq += 1
            self.problems = problems
            self.changed.notify_all()

    def packaged(self, package: Path | None) -> None:
        """The package of the published pages is written (None: it could not be)."""
        with self.changed:
            if package is not None:
                self.package = package
            self.packaging = False
            self.seq += 1
            self.changed.notify_all()

    def wait(self, since: int) -> dict[str, Any]:
        with self.changed:
            self.changed.wait_for(lambda: self.seq != since or self.stopping, timeout=POLL_SECONDS)
            return {
                "version": self.version,
                "seq": self.seq,
                "problems": list(self.problems),
                "packaging": self.packaging,
                "saved": list(self.saved),
            }


def report_failure(state: State, echo: Echo, exc: Exception, headline: str) -> None:
    """A rebuild that raised: the problems on the overlay and the terminal; a bug in deckbuild said as one."""
    if isinstance(exc, DeckbuildError):
        # The errors first (what stopped the build, each in check's order), then the warnings:
        # a large deck's thousands of warnings would otherwise bury the one error a save made.
        found = exc.problems()
        ordered = [p for p in found if p.severity == "error"] + [p for p in found if p.severity != "error"]
        problems = [p.format() for p in ordered] or [str(exc)]
        state.publish(False, problems)
        echo(headline)
        for line in problems:
            echo(f"  {line}")
        return
    state.publish(False, [f"internal error: {type(exc).__name__}: {exc}"])
    echo(f"internal error while rebuilding: {type(exc).__name__}: {exc}")
