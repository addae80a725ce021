"""What a failed save shows on the overlay and in the terminal: check's problems, errors first."""

from __future__ import annotations

from deckbuild.errors import Location, Problem, ProjectInvalid
from deckbuild.preview.live_state import State, report_failure


def test_a_failed_save_lists_every_problem_with_the_errors_before_the_warnings() -> None:
    problems = [
        Problem(Location("cards/a.yaml", 2, 3), "E414", "an earlier warning", "warning"),
        Problem(Location("cards/b.yaml", 9, 1), "E100", "YAML syntax error: x"),
        Problem(Location("cards/c.yaml", 1, 1), "E416", "a later warning", "warning"),
        Problem(Location("deck.yaml"), "E110", "a second error"),
    ]
    state, said = State(), []
    report_failure(state, said.append, ProjectInvalid(problems), "build failed")
    assert state.problems == [
        "cards/b.yaml:9:1: E100 YAML syntax error: x",
        "deck.yaml: E110 a second error",
        "cards/a.yaml:2:3: E414 warning: an earlier warning",
        "cards/c.yaml:1:1: E416 warning: a later warning",
    ]
    assert said == ["build failed", *(f"  {line}" for line in state.problems)]
    assert state.version == 0 and state.seq == 1  # the last good preview stays; the script is woken
