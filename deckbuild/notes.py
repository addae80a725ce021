"""Cards -> rendered notes: field HTML in note type order, tags, GUID and study order."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from deckbuild.apkg import ids
from deckbuild.apkg.notetypes import CLOZE, QA, NoteType
from deckbuild.model import Card, MediaFile, RenderedNote, content_hash, slugify
from deckbuild.render import RenderMemo, figure_html, plain, related_html

if TYPE_CHECKING:
    from deckbuild.incremental.note_reuse import NoteReuse

MISSING_CODE_NOTICE = "The source's code example for this answer was lost; the text refers to code that is not shown."
ILLUSTRATIVE = "Illustrative values, not from the source."
# The tag prefixes every note carries; the preview's filters and the variants' rules read
# them back (plan_result.note_facets, variant_selection.tag_facts).
DIFFICULTY_TAG = "difficulty::"
TOPIC_TAG = "topic::"
SOURCE_TAG = "source::"
KIND_TAG = "kind::"


def effective(card: Card, by_id: Mapping[str, Card]) -> tuple[str, tuple[str, ...], str]:
    """Difficulty, topics and source, inherited from the `of` question card where not given."""
    parent = by_id.get(card.of) if card.of else None
    difficulty = card.difficulty or (parent.difficulty if parent else "")
    topics = card.topics or (parent.topics if parent else ())
    source = card.source or (parent.source if parent else "")
    return difficulty, topics, source


QUESTION_NUMBER = re.compile(r"q0*(\d+)")


def source_text(source: str, titles: Mapping[str, str]) -> str:
    """What the Source field shows: the document's title (deck.yaml `sources:`) and where in it.

    `deep-learning-120#q040` reads "<title> · question 40": the document name and the `qNN`
    position are the importer's keys, which a learner cannot look anything up by.
    """
    if not source:
        return ""
    document, _, where = (part.strip() for part in source.partition("#"))
    title = titles.get(document, document)
    number = QUESTION_NUMBER.fullmatch(where)
    where = f"question {number.group(1)}" if number else where
    return f"{title} · {where}" if where else title


def card_tags(card: Card, difficulty: str, topics: Sequence[str], source: str, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """difficulty::, topic::, source::, kind:: and the card's own tags, sorted and unique."""
    tags = {DIFFICULTY_TAG + difficulty} if difficulty else set()
    tags.update(TOPIC_TAG + topic for topic in topics)
    document = source.split("#", 1)[0].strip() if source else "original"
    tags.add(SOURCE_TAG + slugify(document))
    if card.kind != "qa":
        tags.add(KIND_TAG + card.kind)
    if card.missing_code:
        tags.add("flag::missing-code")
    if card.duplicate_of:
        tags.add(f"dup::{card.duplicate_of}")
    tags.update(card.tags)
    tags.update(extra)
    return tuple(sorted(tags))


def render_notes(
    namespace: str,
    cards: Sequence[Card],
    figures: Mapping[str, tuple[MediaFile, bool]],
    memo: RenderMemo | None = None,
    reuse: NoteReuse | None = None,
    declared: Mapping[str, NoteType] | None = None,
    titles: Mapping[str, str] | None = None,
) -> list[RenderedNote]:
    """Render every card; `figures` maps card id -> (its image, whether values are illustrative);
    `declared`: the project's own note types, for its cards of kind "note"; `titles`: the
    source documents' titles (deck.yaml `sources:`).

    `memo` holds the renderings of earlier builds and workers (a fresh one if not given);
    `reuse` hands back notes of the last build whose inputs did not change (in serve, whole
    card files of them: NoteReuse.kept_runs).
    """
    memo = memo if memo is not None else RenderMemo()
    markdown_html, memoized = memo.markdown_html, memo.memoized
    by_id = {card.id: card for card in cards}
    duplicates_of: dict[str, list[str]] = {}
    for card in cards:
        if card.duplicate_of:
            duplicates_of.setdefault(card.duplicate_of, []).append(card.id)
    kept = reuse.kept_runs(cards, by_id, duplicates_of) if reuse is not None else {}
    notes: list[RenderedNote] = []
    for due, card in enumerate(cards):
        if kept:
            if len(notes) > due:  # inside a kept run
                continue
            run = kept.get(due)
            if run is not None:
                notes.extend(run)
                continue
        if card.kind == "note":
            from deckbuild.notetypes.fields import render_declared

            notes.append(render_declared(card, (declared or {})[card.notetype], namespace, due, memo))
            continue
        if reuse is not None:
            hit = reuse.lookup(card, due, by_id, duplicates_of)
            if hit is not None:
                notes.append(hit)
                continue
        difficulty, topics, source = effective(card, by_id)
        figure = ""
        media: tuple[str, ...] = ()
        if card.figure is not None and card.id in figures:
            file, illustrative = figures[card.id]
            caption = card.figure.alt + (f" ({ILLUSTRATIVE})" if illustrative else "")
            figure = figure_html(file.name, card.figure.alt, caption)
            media = (file.name,)
        notice = MISSING_CODE_NOTICE if card.missing_code else ""
        related_ids = list(card.related)
        if card.duplicate_of:
            related_ids.insert(0, card.duplicate_of)
        related_ids += [cid for cid in duplicates_of.get(card.id, []) if cid not in related_ids]
        label = "Overlaps with" if card.duplicate_of or card.id in duplicates_of else "Related"
        related = related_html([(cid, _front_text(by_id[cid])) for cid in related_ids if cid in by_id], label, memo)
        common = {
            "Details": markdown_html(card.details),
            "Figure": figure,
            "Difficulty": plain(difficulty),
            "Topics": plain(" · ".join(t.replace("::", " › ") for t in topics)),
            "Source": plain(source_text(source, titles or {})),
            "Related": related,
            "Notice": plain(notice),
            "CardId": plain(card.id),
            "My notes": "",  # the learner's field (notetypes.PERSONAL_FIELD)
            "Reserved2": "",
        }
        if card.kind == "qa":
            values = {"Question": markdown_html(card.question), "Answer": markdown_html(card.answer), **common}
            notetype = QA
        else:
            from deckbuild.cloze.emit import render_fact, to_anki_formula

            if card.kind == "formula":
                text = memoized("formula", card.formula, to_anki_formula)
            else:
                text = memoized("fact", card.fact, lambda fact: render_fact(fact, markdown_html))
            parent = by_id.get(card.of)
            if parent is not None and not card.related:
                common["Related"] = related_html([(parent.id, parent.question)], "From the question", memo)
            values = {"Text": text, "Context": markdown_html(card.context), **common}
            notetype = CLOZE
        fields = tuple(values[name] for name in notetype.fields)
        tags = card_tags(card, difficulty, topics, source)
        note = RenderedNote(
            card_id=card.id,
            guid=card.guid or ids.card_guid(namespace, card.id, card.previous_ids),
            notetype=notetype.key,
            fields=fields,
            tags=tags,
            due=due,
            content_hash=content_hash(notetype.key, fields, tags),
            media=media,
            previous_ids=card.previous_ids,
            deck=card.deck,
        )
        if reuse is not None:
            reuse.store(card, note)
        notes.append(note)
    if reuse is not None:
        reuse.remember_runs(notes)
    return notes


def _front_text(card: Card) -> str:
    return card.question or card.context or card.id
