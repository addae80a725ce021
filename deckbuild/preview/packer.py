"""The package of each `deckbuild serve` save, made after its pages in a thread of its own.

A save never waits for the last one's package (several seconds at 100,000 cards): it
abandons it first, and nothing of an abandoned package is written.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from deckbuild.packaging import Abandoned
from deckbuild.preview.live_state import Echo, State, report_failure

if TYPE_CHECKING:
    from deckbuild.preview.resident import Resident


def package_pages(site: Resident, state: State, echo: Echo, superseded: threading.Event | None = None) -> None:
    """The package of the published pages; abandoned, with nothing written, once `superseded` is set
    (the next save's package follows, and the download link serves the last complete one meanwhile)."""

    def checkpoint() -> None:
        if superseded is not None and superseded.is_set():
            raise Abandoned

    try:
        state.packaged(site.write_package(checkpoint))
    except Abandoned:
        return
    except Exception as exc:
        state.packaged(None)
        # The package is planned again from the sources: a save made meanwhile may not build.
        report_failure(state, echo, exc, "build failed while writing the package; the download link serves the last one:")


class Packer:
    """The package of each save, made in a thread of its own so that a save never waits for the
    last one's package (several seconds at 100,000 cards): a new save abandons it first."""

    def __init__(self, site: Resident, state: State, echo: Echo) -> None:
        self.args = (site, state, echo)
        self.thread: threading.Thread | None = None
        self.superseded = threading.Event()

    def start(self) -> None:
        self.superseded = threading.Event()
        self.thread = threading.Thread(target=package_pages, args=(*self.args, self.superseded), name="deckbuild-package")
        self.thread.start()

    def abandon(self) -> None:
        """Stop the package being made (nothing of it is written) and wait until it has stopped."""
        self.superseded.set()
        self.finish()

    def finish(self) -> None:
        if self.thread is not None:
            self.thread.join()
            self.thread = None
