"""Checking a diagram spec against the project's registry: the name is known, every parameter
is one the generator takes, of its declared type.  Never imports a generator."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deckbuild.diagrams.registry import MOVED, DiagramInfo
from deckbuild.errors import DeckbuildError

__all__ = ["DiagramError", "merged_params", "validate"]


class DiagramError(DeckbuildError):
    """A diagram spec that cannot be rendered (unknown name, bad parameters)."""


def _type_ok(kind: str, value: Any) -> bool:
    """A parameter takes its declared type (an int is accepted where a float is)."""
    if kind == "bool" or isinstance(value, bool):
        return kind == "bool" and isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float))
    if kind == "int":
        return isinstance(value, int)
    return isinstance(value, str)


def validate(diagrams: Mapping[str, DiagramInfo], name: str, params: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
    """The problems with a diagram spec, as (code, message) for the card author (empty = fine)."""
    info = diagrams.get(name)
    if info is None:
        known = ", ".join(sorted(diagrams)) or "none (the project has no diagrams/ generators)"
        hint = (
            f"; {name!r} is one of the generators deckbuild no longer ships inside its package: it moved to"
            " the deckbuild repository's diagrams/ folder (the shipped deck's own), copy its file into this"
            " project's diagrams/"
            if name in MOVED
            else "; add a generator with @diagram(...) to a file in diagrams/, or fix the name"
        )
        return [("E280", f"unknown diagram {name!r}; known diagrams: {known}{hint}")]
    if params is None:
        return []
    if not isinstance(params, Mapping):
        return [("E130", f"diagram {name!r}: params must be a mapping, not {type(params).__name__}")]
    problems = []
    for key, value in params.items():
        if key not in info.defaults:
            accepted = ", ".join(sorted(info.defaults)) or "none"
            problems.append(
                ("E281", f"diagram {name!r}: unknown parameter {key!r}; accepted parameters: {accepted} ({info.where})")
            )
        elif not _type_ok(info.types[key], value):
            problems.append(
                (
                    "E282",
                    f"diagram {name!r}: parameter {key!r} must be {info.types[key]}, not {type(value).__name__} ({info.where})",
                )
            )
    return problems


def merged_params(diagrams: Mapping[str, DiagramInfo], name: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The defaults overlaid with a valid spec's params; raises DiagramError for an invalid one."""
    problems = validate(diagrams, name, params)
    if problems:
        raise DiagramError("; ".join(message for _, message in problems))
    info = diagrams[name]
    merged = {**info.defaults, **(params or {})}
    # 10 and 10.0 draw the same picture, so they must give the same cache key.
    return {k: float(v) if info.types[k] == "float" else v for k, v in merged.items()}
