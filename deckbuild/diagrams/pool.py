"""The drawing pool: worker processes, forked from one server that fixed numpy's kernels and
loaded matplotlib, that draw the diagrams a build needs, slowest first."""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deckbuild.diagrams.registry import DiagramInfo
from deckbuild.diagrams.rendering import DrawFailure, draw
from deckbuild.model import Progress

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext

__all__ = [
    "NUMERIC_ENV",
    "Job",
    "Outcome",
    "draw_in_workers",
    "kernels_fixed",
    "start_worker",
    "start_workers",
    "stop_workers",
    "worker_context",
]

_WORKER_MODULE = "deckbuild.diagrams._worker"


NUMERIC_ENV = {
    # numpy picks SIMD kernels for log, exp, sqrt ... by the CPU it runs on, and OpenBLAS
    # picks its matrix kernels the same way; their last bits differ between CPUs, and a
    # log-scaled axis or an ill-conditioned least-squares fit turns that into other pixels
    # (seen: an AVX-512 machine drew 3 of the shipped diagrams differently).  Diagrams are
    # therefore drawn with numpy held to its x86-64-v2 baseline and one OpenBLAS kernel, on
    # one thread, so the bytes do not depend on which x86-64 CPU draws them.  The names are numpy 2.4's
    # dispatch targets (pyproject pins numpy to 2.4.x; another numpy warns of unknown names).
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
    "OPENBLAS_CORETYPE": "Nehalem",
    "OPENBLAS_NUM_THREADS": "1",
}
"""Environment of the processes that draw diagrams (x86-64 only; elsewhere the CPU's own kernels)."""


def start_workers() -> None:
    """Start the drawing workers' imports now, in the background, for a build that will draw.

    The workers are forked from one server process that fixes numpy's kernels and imports
    matplotlib and the house style once (diagrams/_worker.py).  This returns at once: the
    server's imports (half a second of CPU) overlap with what this process does until the
    diagrams are drawn -- parsing and checking the cards.  Without a fork server (Windows)
    it does nothing, and each worker imports matplotlib itself.
    """
    worker_context()


@functools.cache
def worker_context() -> BaseContext:
    """Where the drawing workers come from: the fork server of _worker.py (started here), or 'spawn'.

    Never this process (by 'fork'): its numpy may already be loaded with the CPU's own
    kernels, and it may hold threads or state a forked child must not inherit; the fork
    server is a fresh interpreter that loaded nothing but _worker.py.
    """
    import multiprocessing

    if "forkserver" in multiprocessing.get_all_start_methods():
        from multiprocessing import forkserver

        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([_WORKER_MODULE])
        try:
            forkserver.ensure_running()
        except OSError:  # no socket or temp folder for it: each worker imports for itself
            return multiprocessing.get_context("spawn")
        atexit.register(_stop_server)
        return context
    return multiprocessing.get_context("spawn")


def _stop_server() -> None:
    """End the fork server with this process, even in the middle of its imports (a build that
    failed before drawing); it would otherwise finish them before noticing."""
    import signal
    from multiprocessing import forkserver

    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if pid is None:
        return
    with contextlib.suppress(OSError):  # ChildProcessError: not this process's child (any more)
        if os.waitpid(pid, os.WNOHANG) == (0, 0):  # running, and a child no one reaped: not a reused pid
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def stop_workers() -> None:
    """End the fork server now, for a process that draws no more (a one-off build): idle, it
    still holds matplotlib, about 60 MB, through the packaging that is a large build's peak.

    Killed first, so that a server still importing is not waited for; then stopped the way
    multiprocessing stops it (which reaps it, removes its socket and resets its state), so a
    later drawing in this process starts a fresh server (preloading _worker.py again).
    """
    if "multiprocessing.forkserver" not in sys.modules:
        return  # no server was started (worker_context imports it first): not imported for nothing
    import signal
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver  # private: multiprocessing's own stop is _stop()
    pid = getattr(server, "_forkserver_pid", None)
    if pid is None:
        return
    with contextlib.suppress(OSError):  # a child not reaped yet keeps its pid: never another process's
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        server._stop()


Job = tuple[DiagramInfo, Mapping[str, Any]]
"""A generator and its merged parameters."""
Outcome = bytes | tuple[str, str]
"""A picture's PNG bytes, or (code, message) for what went wrong."""


def _draw_one(info: DiagramInfo, params: dict[str, Any]) -> Outcome:
    """One picture, or what went wrong (a worker's entry point: picklable)."""
    try:
        return draw(info, params)
    except DrawFailure as failure:  # a generator bug must not hide the other diagrams' problems
        return (failure.code, failure.message)


def _on_x86() -> bool:
    import platform

    return platform.machine().lower() in ("x86_64", "amd64")


def start_worker() -> None:
    """Hold a drawing process's numpy and OpenBLAS to NUMERIC_ENV before numpy is imported
    (both read it once, when loaded); refuse a numpy already loaded with other kernels.

    A worker forked from the server (_worker.py) finds numpy loaded there after this ran:
    that is checked, not trusted.
    """
    if not _on_x86():
        return
    if "numpy" in sys.modules:
        if not kernels_fixed():
            raise RuntimeError("numpy was imported before the diagram worker could fix its CPU kernels")
        return
    os.environ.update(NUMERIC_ENV)


def kernels_fixed() -> bool:
    """Whether the loaded numpy was loaded under NUMERIC_ENV: the environment still says so and
    none of the dispatch targets it disables is in use."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    held = all(os.environ.get(key) == value for key, value in NUMERIC_ENV.items())
    return held and not any(__cpu_features__.get(target) for target in __cpu_dispatch__)


def draw_in_workers(todo: Sequence[Job], workers: int, progress: Progress | None) -> list[Outcome]:
    """Every job's outcome, in job order, drawn by `workers` worker processes (one when jobs=1).

    The slowest diagrams (by their `cost`) are taken up first, so that what is left for the
    end is quick ones and the workers finish together (longest processing time first).
    """
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    order = sorted(range(len(todo)), key=lambda i: -todo[i][0].cost)  # stable: spec order among equals
    outcomes: dict[int, Outcome] = {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=worker_context(), initializer=start_worker) as pool:
        futures = {i: pool.submit(_draw_one, todo[i][0], dict(todo[i][1])) for i in order}
        for n, i in enumerate(order, start=1):
            if progress is not None:
                progress(n, len(todo), todo[i][0].name)
            with contextlib.suppress(BrokenProcessPool):  # a generator ended its process: found below
                outcomes[i] = futures[i].result()  # wait, so the progress follows the drawing
    for i in order:  # a broken pool fails every job it held: each is drawn again alone
        if i not in outcomes:
            outcomes[i] = _draw_alone(todo[i])
    return [outcomes[i] for i in range(len(todo))]


def _draw_alone(job: Job) -> Outcome:
    """One job in a pool of its own, so a process that ends is known to be this generator's."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    info, params = job
    with ProcessPoolExecutor(max_workers=1, mp_context=worker_context(), initializer=start_worker) as pool:
        try:
            return pool.submit(_draw_one, info, dict(params)).result()
        except BrokenProcessPool:
            return (
                "E283",
                f"generator {info.name!r} ({info.where}) ended the process drawing it (os._exit, a crash, or"
                " killed) before returning a figure",
            )
