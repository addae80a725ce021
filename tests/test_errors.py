"""errors.py: one hierarchy for every error a user can meet, and one text for every problem."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import deckbuild
from deckbuild.errors import DeckbuildError, LocatedError, Location, Problem, TextProblem, problem_order
from deckbuild.importer.cardfiles import CardsFileError
from deckbuild.importer.seeds import SeedFormatError


def _draws(info: pkgutil.ModuleInfo) -> bool:
    """Modules that import matplotlib (a second each) to draw, and define no exceptions."""
    spec = importlib.util.find_spec(info.name)
    source = Path(spec.origin).read_text(encoding="utf-8") if spec and spec.origin else ""
    return info.name.startswith("deckbuild.diagrams.") and ("import matplotlib" in source or "from matplotlib" in source)


def test_every_exception_deckbuild_defines_is_a_deckbuild_error() -> None:
    """A user's mistake reaches the CLI as `file:line:col: CODE message`, never as an internal error."""
    found = []
    for info in pkgutil.walk_packages(deckbuild.__path__, "deckbuild."):
        if _draws(info):
            continue
        module = importlib.import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == module.__name__ and not name.startswith("_"):
                found.append(cls)
    assert len(found) >= 10
    assert [cls.__qualname__ for cls in found if not issubclass(cls, DeckbuildError)] == []


def test_located_errors_format_like_problems() -> None:
    error = LocatedError(Location("deck.yaml", 3, 10), "E151", "'version': expected MAJOR.MINOR.PATCH")
    assert str(error) == "deck.yaml:3:10: E151 'version': expected MAJOR.MINOR.PATCH"
    assert (error.location, error.code, error.message) == (
        Location("deck.yaml", 3, 10),
        "E151",
        "'version': expected MAJOR.MINOR.PATCH",
    )
    assert [p.format() for p in error.problems()] == [str(error)]


def test_seed_and_cards_file_errors_keep_their_text(tmp_path: Path) -> None:
    seed = SeedFormatError(tmp_path / "seed.txt", 4, "E314", "expected a bullet")
    assert str(seed) == f"{tmp_path / 'seed.txt'}:4:1: E314 expected a bullet"
    assert (seed.code, seed.line) == ("E314", 4)
    whole = SeedFormatError(tmp_path / "seed.txt", None, "E301", "empty seed file")
    assert str(whole) == f"{tmp_path / 'seed.txt'}: E301 empty seed file" and whole.line is None
    cards = CardsFileError(tmp_path / "cards" / "a.yaml", "E341", "expected a YAML list of cards (mappings)")
    assert str(cards) == f"{tmp_path / 'cards' / 'a.yaml'}: E341 expected a YAML list of cards (mappings)"
    assert isinstance(seed, LocatedError) and isinstance(cards, LocatedError)


def test_a_text_problem_is_placed_by_its_caller() -> None:
    found = TextProblem(7, "E406", "unknown macro '\\oops' for MathJax")
    placed = found.at(Location("cards/a.yaml", 2, 12), "card 'x': formula: ")
    assert placed == Problem(Location("cards/a.yaml", 2, 12), "E406", "card 'x': formula: unknown macro '\\oops' for MathJax")
    assert placed.format() == "cards/a.yaml:2:12: E406 card 'x': formula: unknown macro '\\oops' for MathJax"


_PROBLEMS = st.lists(
    st.builds(
        Problem,
        st.builds(Location, st.sampled_from(["cards/a.yaml", "cards/b.yaml", "deck.yaml"]), st.integers(0, 5), st.integers(0, 5)),
        st.sampled_from(["E108", "E110", "E414", "E416"]),
        st.text(max_size=3),
    ),
    max_size=40,
)


@given(_PROBLEMS)
def test_problems_are_reported_in_the_order_of_their_locations_then_codes(problems: list[Problem]) -> None:
    """problem_order, the plan's key, orders as (location, code) does: file, line, column, code."""
    by_key = sorted(problems, key=problem_order)
    assert [problem_order(p) for p in by_key] == [problem_order(p) for p in sorted(problems, key=lambda p: (p.location, p.code))]
    assert [(p.location, p.code) for p in by_key] == sorted((p.location, p.code) for p in problems)
