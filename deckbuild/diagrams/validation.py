"""Checking a diagram spec against its registry entry: the name is known, every parameter is
one the generator takes, of the type of its default.  Never imports a generator."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deckbuild.diagrams.registry import REGISTRY
from deckbuild.errors import DeckbuildError

__all__ = ["DiagramError", "merged_params", "validate"]


class DiagramError(DeckbuildError):
    """A diagram spec that cannot be rendered (unknown name, bad parameters)."""


def _type_ok(default: Any, value: Any) -> bool:
    """Parameters take the type of their default (an int is accepted where a float is)."""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if isinstance(default, int):
        return isinstance(value, int)
    return isinstance(value, type(default))


def validate(name: str, params: Mapping[str, Any] | None = None) -> list[str]:
    """The problems with a diagram spec, as messages for the card author (empty = fine)."""
    info = REGISTRY.get(name)
    if info is None:
        return [f"unknown diagram {name!r}; known diagrams: {', '.join(sorted(REGISTRY))}"]
    if params is None:
        return []
    if not isinstance(params, Mapping):
        return [f"diagram {name!r}: params must be a mapping, not {type(params).__name__}"]
    problems = []
    for key, value in params.items():
        if key not in info.defaults:
            accepted = ", ".join(sorted(info.defaults)) or "none"
            problems.append(f"diagram {name!r}: unknown parameter {key!r}; accepted parameters: {accepted}")
        elif not _type_ok(info.defaults[key], value):
            problems.append(
                f"diagram {name!r}: parameter {key!r} must be {type(info.defaults[key]).__name__}, not {type(value).__name__}"
            )
    return problems


def merged_params(name: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The defaults overlaid with a valid spec's params; raises DiagramError for an invalid one."""
    problems = validate(name, params)
    if problems:
        raise DiagramError("; ".join(problems))
    defaults = REGISTRY[name].defaults
    merged = {**defaults, **(params or {})}
    # 10 and 10.0 draw the same picture, so they must give the same cache key.
    return {k: float(v) if isinstance(defaults[k], float) else v for k, v in merged.items()}
