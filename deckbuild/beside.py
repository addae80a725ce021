"""Work done by a forked copy of this process while this one goes on: a second core for a
stage whose inputs are already in memory and whose result is small.

A rebuild of a large deck runs its deck-wide checks over every card (0.4 s at 100,000 cards)
although nothing after them needs their result until the plan is complete.  A child forked
once the cards are loaded shares them without copying or decoding them again, runs the
checks on the other core and hands back only its result, pickled through a pipe: data
between a process and its own fork, never stored (the build cache stays JSON).

A child that fails in any way (killed, out of memory, an exception) costs only time: result()
then runs the work in this process.  Nothing is forked where it is not safe: only on Linux
(a forked macOS process may not use every system library), and never from a process with
another thread running (a lock held by that thread at the fork would never be released in
the child).  The child writes nothing but its result and leaves by os._exit: no exit
handler, buffered output or database connection of the parent's is used there.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_EXITING: set[int] = set()
"""Children that handed their result over and are still exiting (a large process takes a
while to free its memory): reaped by a later call, never waited for."""


class Beside(Generic[T]):
    """A forked child computing `work()`; result() takes what it computed (or does the work here)."""

    def __init__(self, work: Callable[[], T], pid: int, fd: int) -> None:
        self._work = work
        self._pid = pid
        self._fd = fd

    def result(self) -> T:
        """What work() returned in the child, or work() run here if the child failed."""
        chunks = []
        try:
            while chunk := os.read(self._fd, 1 << 20):
                chunks.append(chunk)
        except OSError:
            chunks = []
        finally:
            os.close(self._fd)
        _EXITING.add(self._pid)
        _reap()
        if chunks:  # a child that failed while writing leaves part of a pickle, which does not load
            try:
                value: T = pickle.loads(b"".join(chunks))
            except Exception:  # noqa: BLE001 -- whatever it is, the child failed: the work is done here
                pass
            else:
                return value
        return self._work()

    def cancel(self) -> None:
        """Stop the child and wait for it (the plan it works for failed or was interrupted)."""
        with contextlib.suppress(OSError):
            os.kill(self._pid, signal.SIGKILL)
        os.close(self._fd)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self._pid, 0)


def _reap() -> None:
    """Collect the exit of every child that has exited by now."""
    for pid in list(_EXITING):
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _EXITING.discard(pid)


def start(work: Callable[[], T]) -> Beside[T] | None:
    """Fork a child that runs `work()` now, or None where a fork is not safe (the caller then
    runs the work itself)."""
    if sys.platform != "linux" or threading.active_count() > 1:
        return None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover -- the child (coverage does not follow it); tests check its result
        code = 1
        try:
            os.close(read_end)
            data = memoryview(pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL))
            while data:
                data = data[os.write(write_end, data) :]
            os.close(write_end)  # the parent reads on at once; this process's exit takes longer
            code = 0
        except BaseException:  # noqa: BLE001 -- any failure: the parent does the work itself
            pass
        finally:
            os._exit(code)
    os.close(write_end)
    return Beside(work, pid, read_end)
