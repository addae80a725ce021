"""A card's `lint:` key: the learning-lint warnings it silences, each with the reason why.

    lint:
      E423: "the context repeats the term on purpose: the card asks for its formula"

Read with the card (card_entry.py): a key that is not a lint warning's code, or a reason
that is not text, is an error (E426); a silence of a code that does not fire is reported
(E427, run.py), so silences never outlive what they silenced.
"""

from __future__ import annotations

from deckbuild.errors import Location, Problem, close_key
from deckbuild.lint.codes import E_SILENCE_FORM, WARNINGS
from deckbuild.yamlload import LocatedMap

Silences = tuple[tuple[str, str], ...]
"""(code, reason) pairs, in the order written."""


def silence_key(code: str) -> str:
    """The key_locations entry of one silence's reason (where E427 points)."""
    return f"lint.{code}"


def parse_silences(item: LocatedMap, card_id: str, problems: list[Problem]) -> tuple[Silences, dict[str, Location]]:
    """The card's `lint:` mapping -> its silences and where each reason is written."""
    value = item.get("lint")
    where = item.value_locs.get("lint", item.loc)
    codes = ", ".join(WARNINGS)
    if not isinstance(value, LocatedMap) or not value:
        problems.append(
            Problem(
                where,
                E_SILENCE_FORM,
                f"card '{card_id}': 'lint': expected a mapping of a lint code to the reason it is silenced, "
                f'like {{E423: "why the warning is wrong here"}}; codes: {codes}',
            )
        )
        return (), {}
    out: list[tuple[str, str]] = []
    locations: dict[str, Location] = {}
    for code, reason in value.items():
        code_text = str(code)
        if code_text not in WARNINGS:
            meant = close_key(code_text, WARNINGS, value)
            hint = f"did you mean '{meant}'? " if meant else ""
            problems.append(
                Problem(
                    value.key_locs[code],
                    E_SILENCE_FORM,
                    f"card '{card_id}': 'lint': {code_text!r} is not a learning-lint warning; {hint}expected one of {codes}",
                )
            )
            continue
        if not isinstance(reason, str) or not reason.strip():
            problems.append(
                Problem(
                    value.value_locs[code],
                    E_SILENCE_FORM,
                    f"card '{card_id}': 'lint': {code_text}: expected the reason the warning is wrong here, as text",
                )
            )
            continue
        out.append((code_text, reason.strip()))
        locations[silence_key(code_text)] = value.value_locs[code]
    return tuple(out), locations
