"""What a retired note shows: why it retired and which card replaces it, from releases/retired.yaml.

Anki never deletes a note on import, so a retired note keeps reaching its learners.  Its front
is rewritten to say so, why, and which live card to study instead (named by its question, not
by an id), in a few short lines that fit a phone.  The author writes the reasons once:

    formula-adam-training-memory:
      reason: merged into the card on the whole training-memory budget
      replaced_by: training-memory-budget

A retired id that a live card lists in `previous_ids` is replaced by that card unless the file
says otherwise.  The snapshots in releases/ are read as they are; the rewrite is applied to
each retired note when it is built, so older releases stay readable.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path

from deckbuild.apkg.notetypes import NOTETYPES
from deckbuild.errors import Location, Problem, ProjectInvalid, close_key
from deckbuild.layout import RETIRED_FILE
from deckbuild.model import RETIRED_TAG, Card, RenderedNote, content_hash
from deckbuild.notes import source_text
from deckbuild.release.versioning import PublishedNote, Snapshot
from deckbuild.render import plain
from deckbuild.yamlload import LocatedMap, load_yaml

KEYS = ("reason", "replaced_by")
DEFAULT_REASON = "This card is no longer part of the deck."
# Codes a learner must never see: error codes, seed question refs (q040, attn-q03), the
# formula-table refs of the seeds ((F48)), and hex digests.
INTERNAL_CODE = re.compile(r"\bE\d{3}\b|\(F\d+\)|\b(?:[a-z0-9]+-)*q\d{2,3}\b|\b[0-9a-f]{12,}\b")
_CLOZE_NUMBER = re.compile(r"\{\{c(\d+)::")
_CLOZE = re.compile(r"\{\{c\d+::.*?\}\}(?!\})")


@dataclass(frozen=True)
class Retirement:
    """Why one retired note left the deck and which live card replaces it ("" = none named)."""

    reason: str
    replaced_by: str


def shipped(
    root: Path,
    cards: Sequence[Card],
    rendered: Sequence[RenderedNote],
    snapshot: Snapshot,
    titles: Mapping[str, str] | None = None,
) -> list[PublishedNote]:
    """The notes `snapshot` retired that still ship, each telling its learners why and what replaces it;
    `titles` (deck.yaml `sources:`) names their Source as the live cards' is named."""
    current = {n.card_id for n in rendered}
    guids = {n.guid for n in rendered}  # a retired note a card took back (previous_ids) ships once
    gone = [n for k, n in sorted(snapshot.notes.items()) if n.retired and k not in current and n.guid not in guids]
    leaving = {k for k, n in snapshot.notes.items() if not n.retired and k not in current and n.guid not in guids}
    live = {n.card_id: question_text(n.fields, n.notetype == "cloze") for n in rendered}
    renamed = {old: c.id for c in cards for old in c.previous_ids}
    why = load(root, {n.card_id for n in gone}, leaving, live, renamed)
    return [present(n, why[n.card_id], live, titles or {}) for n in gone]


def check(root: Path, cards: Sequence[Card], snapshot: Snapshot) -> list[Problem]:
    """retired.yaml's problems (E435–E439), found from the cards before any is rendered (`check`)."""
    ids = {c.id for c in cards}
    claimed = {old for c in cards for old in c.previous_ids}
    retired = {k for k, n in snapshot.notes.items() if n.retired and k not in ids}
    leaving = {k for k, n in snapshot.notes.items() if not n.retired and k not in ids and k not in claimed}
    renamed = {old: c.id for c in cards for old in c.previous_ids}
    try:
        load(root, retired, leaving, dict.fromkeys(ids, ""), renamed)
    except ProjectInvalid as invalid:
        return list(invalid.problems())
    return []


def load(
    root: Path,
    retired: Set[str],
    leaving: Set[str],
    live: Mapping[str, str],
    renamed: Mapping[str, str],
) -> dict[str, Retirement]:
    """Every retired note's retirement, by card id; ProjectInvalid on a bad retired.yaml (E435–E439).

    `retired`: ids the last release retired; `leaving`: ids it shipped live that left the
    sources (the next release retires them); `live`: card id -> its question, for every card
    now in the deck; `renamed`: old id -> the live card that lists it in `previous_ids`."""
    entries: dict[str, Retirement] = {
        card_id: Retirement(DEFAULT_REASON, renamed.get(card_id, "")) for card_id in (*retired, *leaving)
    }
    path = root / RETIRED_FILE
    if not path.exists():
        return entries
    data, problems = load_yaml(path, RETIRED_FILE)
    if problems:
        raise ProjectInvalid(problems)
    if data is None:
        return entries
    if not isinstance(data, LocatedMap):
        raise ProjectInvalid(
            [
                _problem(
                    Location(RETIRED_FILE, 1, 1),
                    "E435",
                    "expected a mapping of retired card ids to {reason, replaced_by}",
                    type(data).__name__,
                )
            ]
        )
    for card_id, entry in data.items():
        where = data.key_locs.get(card_id, data.loc)
        try:
            entries[str(card_id)] = _entry(
                str(card_id), entry, where, data.value_locs.get(card_id, where), retired | leaving, live, renamed
            )
        except _Bad as bad:
            problems.append(bad.problem)
    if problems:
        raise ProjectInvalid(problems)
    return entries


class _Bad(Exception):
    def __init__(self, problem: Problem) -> None:
        self.problem = problem


def _problem(where: Location, code: str, expected: str, found: str, fix: str = "") -> Problem:
    return Problem(where, code, f"expected {expected}, found {found}" + (f"; {fix}" if fix else ""))


def _entry(
    card_id: str,
    entry: object,
    where: Location,
    value_where: Location,
    retired: Set[str],
    live: Mapping[str, str],
    renamed: Mapping[str, str],
) -> Retirement:
    if card_id not in retired:
        what = "a live card of the deck" if card_id in live else "an id no release shipped"
        fix = (
            "remove the entry (only a retired card is listed here)"
            if card_id in live
            else "check the id against releases/*.jsonl"
        )
        raise _Bad(_problem(where, "E437", "the id of a retired note", f"'{card_id}', {what}", fix))
    if not isinstance(entry, LocatedMap):
        raise _Bad(_problem(value_where, "E435", "a mapping with reason: and replaced_by:", type(entry).__name__))
    for key in entry:
        if key not in KEYS:
            near = close_key(str(key), KEYS, entry)
            hint = f"did you mean '{near}'?" if near else f"the keys are {', '.join(KEYS)}"
            raise _Bad(_problem(entry.key_locs.get(key, entry.loc), "E435", "reason or replaced_by", f"key '{key}'", hint))
    reason = entry.get("reason")
    reason_at = entry.value_locs.get("reason", entry.loc)
    if not isinstance(reason, str) or not reason.strip():
        raise _Bad(
            _problem(
                reason_at,
                "E438",
                "a reason: in words, for the learner",
                "none" if reason is None else repr(reason),
                "say why the card retired, e.g. 'merged into a clearer card'",
            )
        )
    code = INTERNAL_CODE.search(reason) or next(
        (m for m in re.finditer(r"[\w-]+", reason) if m.group() in live or m.group() in retired), None
    )
    if code is not None:
        raise _Bad(
            _problem(
                reason_at,
                "E439",
                "a reason a learner can read",
                f"the internal code '{code.group()}'",
                "say it in words (name a card by its question: replaced_by does)",
            )
        )
    replaced_by = entry.get("replaced_by", renamed.get(card_id, ""))
    by_at = entry.value_locs.get("replaced_by", entry.loc)
    if not isinstance(replaced_by, str):
        raise _Bad(_problem(by_at, "E435", "a card id as replaced_by", type(replaced_by).__name__))
    if replaced_by and replaced_by not in live:
        near = close_key(replaced_by, live)
        hint = f"did you mean '{near}'?" if near else "name a card id of cards/*.yaml"
        found = f"'{replaced_by}', a retired card" if replaced_by in retired else f"'{replaced_by}', no card of the deck"
        raise _Bad(_problem(by_at, "E436", "the id of a live card that replaces it", found, hint))
    return Retirement(reason.strip(), replaced_by)


def question_text(fields: tuple[str, ...] | list[str], is_cloze: bool) -> str:
    """A live card's front as a learner reads it, to name it by: a cloze's context, or its text
    with every deletion shown as [...] (never its answer)."""
    text = (fields[1] or _CLOZE.sub("[...]", fields[0])) if is_cloze else fields[0]
    text = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text))).strip()
    return text if len(text) <= 160 else text[:159].rsplit(" ", 1)[0] + "…"


def present(
    note: PublishedNote, retirement: Retirement, live: Mapping[str, str], titles: Mapping[str, str] | None = None
) -> PublishedNote:
    """The retired note as learners get it: its front says it retired, why, and what to study instead;
    a Source shipped as `<document> · <where>` names the document's title instead (notes.source_text).

    The same note and retirement always give the same fields (a rebuilt note is unchanged);
    a declared note type's note keeps its fields (only its tag says it retired)."""
    kind = NOTETYPES.get(note.notetype)
    if kind is None or len(kind.fields) != len(note.fields):
        return note
    replacement = live.get(retirement.replaced_by, "")
    lines = [
        '<div class="db-notice db-retired">',
        f"<p><strong>Retired card.</strong> {html.escape(retirement.reason, quote=False)}</p>",
        f"<p>Study instead: “{html.escape(replacement, quote=False)}”</p>" if replacement else "",
        f"<p>Suspend or delete this card (search: tag:{RETIRED_TAG}).</p>",
        "</div>",
    ]
    front = "".join(lines)
    fields = dict(zip(kind.fields, note.fields, strict=True))
    if kind.is_cloze:
        # Anki keeps a card only while its cloze number is in the text: each stays, unseen.
        numbers = sorted({int(n) for n in _CLOZE_NUMBER.findall(note.fields[0])}) or [1]
        hidden = "".join(f"{{{{c{n}::retired}}}}" for n in numbers)
        fields["Text"] = f'{front}<span class="db-retired-cards" hidden>{hidden}</span>'
        fields["Context"] = ""
    else:
        fields["Question"] = front
    document, dot, where = html.unescape(fields.get("Source", "")).partition(" · ")
    if document in (titles or {}):
        fields["Source"] = plain(source_text(f"{document}#{where}" if dot else document, titles or {}))
    new = tuple(fields[name] for name in kind.fields)
    if new == note.fields:
        return note
    return PublishedNote(
        note.card_id,
        note.guid,
        note.notetype,
        new,
        note.tags,
        note.front,
        content_hash(note.notetype, list(new), note.tags),
        note.retired,
        note.deck,
    )
