"""What a project's generator imports to declare itself: ``@diagram("name", ...)``.

Cheap on purpose (no matplotlib): the build reads the decorator statically, and at drawing
time it only marks the function.  The house style generators draw with is
deckbuild.diagrams.style (matplotlib; import it inside the generator's module).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["diagram"]

F = TypeVar("F", bound=Callable[..., object])


def diagram(
    name: str, *, title: str = "", illustrative: bool = False, cost: int = 100, time_limit: float = 60.0
) -> Callable[[F], F]:
    """Declare a generator: a function returning a matplotlib Figure, every parameter an
    int, float, bool or str with a literal default (a card's `params:` overrides them).

    title: what the picture shows; illustrative: the values are made up (the picture says
    so); cost: about how many milliseconds it draws for (only orders the work); time_limit:
    seconds before the build gives up on it (E284).  Every argument must be a literal.
    """

    def mark(function: F) -> F:
        function.__deckbuild_diagram__ = name  # type: ignore[attr-defined]
        return function

    return mark
