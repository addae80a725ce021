"""seeds/curation.yaml: what a person decided for seed questions before their cards existed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from deckbuild.errors import ProjectInvalid
from deckbuild.yamlload import load_yaml, to_plain


@dataclass(frozen=True)
class CurationEntry:
    """What a person decided for one seed question before its card existed."""

    id: str
    question: str
    topics: tuple[str, ...]
    tags: tuple[str, ...] = ()
    duplicate_of: str | None = None
    related: tuple[str, ...] = ()
    missing_code: bool = False


@dataclass(frozen=True)
class Curation:
    """seeds/curation.yaml: per-question curation, code allow-list, subscript fixes."""

    entries: tuple[CurationEntry, ...] = ()
    code_identifiers: tuple[str, ...] = ()
    replacements: dict[str, dict[str, str]] = field(default_factory=dict)


def load_curation(path: Path) -> Curation:
    """Read the curation file; a missing file means nothing is curated."""
    path = Path(path)
    if not path.exists():
        return Curation()
    located, problems = load_yaml(path, str(path))
    if problems:
        raise ProjectInvalid(problems)
    data = to_plain(located) or {}
    entries = tuple(
        CurationEntry(
            id=item["id"],
            question=item["question"],
            topics=tuple(item.get("topics") or ()),
            tags=tuple(item.get("tags") or ()),
            duplicate_of=item.get("duplicate_of"),
            related=tuple(item.get("related") or ()),
            missing_code=bool(item.get("missing_code", False)),
        )
        for item in data.get("cards") or ()
    )
    return Curation(
        entries=entries,
        code_identifiers=tuple(data.get("code_identifiers") or ()),
        replacements={k: dict(v) for k, v in (data.get("replacements") or {}).items()},
    )
