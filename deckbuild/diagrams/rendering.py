"""One diagram to PNG bytes in this process: its generator loaded by path, called under the
house style and its time limit, and the figure saved without metadata.

A project's generator file is compiled and run as a module of its own, never through
sys.path (a project's `diagrams` folder shadows nothing) and never leaving a __pycache__
in the project (which would change the build's inputs).
"""

from __future__ import annotations

import contextlib
import io
import signal
import sys
import traceback
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from deckbuild.diagrams.registry import DiagramInfo

__all__ = ["DrawFailure", "draw", "load_generator"]

_MODULES: dict[Path, types.ModuleType] = {}


class DrawFailure(Exception):
    """A generator that raised (E283) or ran past its time limit (E284), with where it was."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _PastLimit(BaseException):
    """Raised inside a generator by the alarm: not an Exception, so its own handlers let it through."""


def load_generator(info: DiagramInfo) -> Any:
    """The generator function, its file run once per process as module `deckbuild_project_diagram_<n>`."""
    module = _MODULES.get(info.source)
    if module is None:
        source = info.source.read_bytes()
        module = types.ModuleType(f"deckbuild_project_diagram_{len(_MODULES)}")
        module.__file__ = str(info.source)
        code = compile(source, str(info.source), "exec", dont_inherit=True)
        sys.modules[module.__name__] = module  # dataclasses and pickling look modules up by name
        exec(code, module.__dict__)
        _MODULES[info.source] = module
    return getattr(module, info.function)


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block after `seconds` of wall time (where SIGALRM exists: POSIX)."""
    if not hasattr(signal, "setitimer") or seconds <= 0:
        yield
        return

    def alarm(signum: int, frame: object) -> None:
        raise _PastLimit

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _where_in(info: DiagramInfo, tb: types.TracebackType | None) -> str:
    """file:line of the deepest frame in the generator's file (its def when none is)."""
    line = info.where.line
    for frame, lineno in traceback.walk_tb(tb):
        if Path(frame.f_code.co_filename) == info.source:
            line = lineno
    return f"{info.where.path}:{line}"


def draw(info: DiagramInfo, params: Mapping[str, Any]) -> bytes:
    """Run a generator under the fixed style; the PNG bytes, or DrawFailure."""
    import matplotlib
    import matplotlib.style

    from deckbuild.diagrams import style

    try:
        with _time_limit(info.time_limit), matplotlib.rc_context():
            matplotlib.style.use(["default", style.STYLE])
            fig = load_generator(info)(**params)
            if info.illustrative:
                style.reserve_bottom(fig, style.LABEL_STRIP_IN)
                fig.text(
                    0.99,
                    0.008,
                    style.ILLUSTRATIVE_LABEL,
                    ha="right",
                    va="bottom",
                    fontsize=style.MIN_PT,
                    color=style.MUTED,
                    style="italic",
                )
            style.check_text_sizes(fig, info.name)
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=style.DPI, metadata={"Software": None})
    except _PastLimit:
        raise DrawFailure(
            "E284",
            f"generator {info.name!r} ({info.where}) ran past its time limit of {info.time_limit:g} s;"
            " make it faster or raise @diagram(time_limit=...)",
        ) from None
    except BaseException as exc:  # the author's code: any bug (even sys.exit()) is reported, never a traceback
        raise DrawFailure(
            "E283", f"generator {info.name!r} raised {type(exc).__name__}: {exc} ({_where_in(info, exc.__traceback__)})"
        ) from None
    return buf.getvalue()
