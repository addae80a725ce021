"""The one exception hierarchy: every problem knows its file, line and stable code.

Stages never print and never exit; they collect `Problem`s (or raise `DeckbuildError`)
and the CLI turns them into `path:line:col: CODE message` lines and an exit status.

    DeckbuildError                 anything a user is told about (never a traceback)
      ProjectInvalid               many problems found by checking the sources
      LocatedError                 one problem at a known place
        importer.seeds.SeedFormatError, importer.cardfiles.CardsFileError
      BuildBusy                    another deckbuild holds the project lock
      WriteFailed                  the writer could not create, replace or remove one file (rolled back)
      diagrams.DiagramError        a diagram spec that cannot be drawn (DiagramFailures: drawing failed)
      preview: PreviewError, DoesNotFit, ServeError
    Problem                        one located finding; TextProblem: one at an offset of a text
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Location:
    """A place in a source file (1-based line and column; 0 means 'the whole file')."""

    path: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.path
        return f"{self.path}:{self.line}:{max(self.col, 1)}"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the sources: where, a stable code, and what to do."""

    location: Location
    code: str
    message: str
    severity: Severity = "error"
    # The id of a card this problem made invalid (so it is left out of the deck): references
    # to that card are not reported again as dangling (E110), since the card exists.
    subject: str = ""

    def format(self) -> str:
        prefix = "" if self.severity == "error" else "warning: "
        return f"{self.location}: {self.code} {prefix}{self.message}"

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.location.path,
            "line": self.location.line,
            "col": self.location.col,
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
        }


def problem_order(problem: Problem) -> tuple[str, int, int, str]:
    """The order problems are reported in: file, line, column, then code.

    The same order as sorting by (location, code), in plain values: a Location compares
    through its generated __lt__ and __eq__, Python calls that made sorting a large deck's
    30,000 warnings four times slower."""
    location = problem.location
    return location.path, location.line, location.col, problem.code


def close_key(key: str, allowed: Iterable[str], present: Iterable[str] = ()) -> str | None:
    """The allowed key a misspelt one most likely meant (for "did you mean"), unless it is given too."""
    given = set(present)
    matches = difflib.get_close_matches(key, [k for k in allowed if k not in given], n=1, cutoff=0.75)
    return matches[0] if matches else None


class DeckbuildError(Exception):
    """Base of every error deckbuild reports to a user (never shown as a traceback)."""

    exit_code = 1

    def problems(self) -> Sequence[Problem]:
        return ()


class ProjectInvalid(DeckbuildError):
    """The sources have errors; nothing was written."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self._problems = tuple(problems)
        errors = sum(1 for p in self._problems if p.severity == "error")
        super().__init__(f"{errors} error(s) in the sources; nothing was written")

    def problems(self) -> Sequence[Problem]:
        return self._problems


@dataclass(frozen=True)
class TextProblem:
    """A problem at a character offset of one text value, found before the text's place in a
    file is known (the cloze and LaTeX checks are pure); `at` places it."""

    offset: int
    code: str
    message: str

    def at(self, location: Location, prefix: str = "") -> Problem:
        """The located problem, its message after `prefix` (e.g. "card 'x': formula: ")."""
        return Problem(location, self.code, prefix + self.message)


class LocatedError(DeckbuildError):
    """A single error at a known place (a seed file, deck.yaml, the lock file, a cards file)."""

    def __init__(self, location: Location, code: str, message: str) -> None:
        self.problem = Problem(location, code, message)
        super().__init__(self.problem.format())

    @property
    def location(self) -> Location:
        return self.problem.location

    @property
    def code(self) -> str:
        return self.problem.code

    @property
    def message(self) -> str:
        return self.problem.message

    def problems(self) -> Sequence[Problem]:
        return (self.problem,)


class PreviewError(DeckbuildError):
    """The preview cannot be written where asked (the preview site and its fit check raise it)."""


class BuildBusy(DeckbuildError):
    """Another deckbuild process holds the project's lock."""

    exit_code = 3


class WriteFailed(DeckbuildError):
    """One file the writer could not create, replace or remove; every file it had replaced is back.

    `path` is that file, `reason` the cause the OS gave, `step` one of "in the way" (a folder
    or other non-file holds the name), "stage" (its temp file could not be written beside it),
    "replace" (the rename over it failed), "create" (a new file or folder) or "remove".
    Commands that know the project turn it into their own located error; anywhere else it is
    reported as it is, at that file (E166, E162 or E167).
    """

    def __init__(self, path: object, reason: str, step: str) -> None:
        self.path = path
        self.reason = reason
        self.step = step
        super().__init__(self.problems()[0].format())

    def problems(self) -> Sequence[Problem]:
        where = Location(str(self.path))
        if self.step == "in the way":
            message = f"cannot write {self.path}: {self.reason}; a file or folder is in its way: move it or choose another place"
            return (Problem(where, "E166", message),)
        if self.step == "replace":
            message = f"cannot replace {self.path}: {self.reason}; make that file writable and run again"
            return (Problem(where, "E162", message),)
        verb = "remove" if self.step == "remove" else "write"
        message = f"cannot {verb} {self.path}: {self.reason}; make its folder writable (or free disk space) and run again"
        return (Problem(where, "E167", message),)


def has_errors(problems: Iterable[Problem]) -> bool:
    return any(p.severity == "error" for p in problems)
