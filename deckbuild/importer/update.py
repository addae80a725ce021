"""The import plan: what turning seed question banks into cards/*.yaml (and keeping them in
step) would write; the `deckbuild import` command (commands.py) plans it and applies it.

The importer owns only what came from a seed: a new card's text, `source` and the `origin`
record.  Everything a person (or another tool) curated on a card - its gist and details, id,
topics, links, tags, extra keys such as `diagram:` - is kept on re-import; a seed whose
answer changed since the card was curated is reported instead of copied over the curation.  Cards are matched to
seed questions through `origin.question` (exact, then fuzzy), never by position, so
inserting, removing or lightly rewording a question keeps every id stable.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deckbuild.apkg.ids import CARD_ID_PATTERN, slug_for_question
from deckbuild.importer.cardfiles import (
    CardsFileError,
    dump_cards,
    load_cards,
    set_key,
    sort_key,
    topic_file,
)
from deckbuild.importer.curation import Curation, CurationEntry, load_curation
from deckbuild.importer.matching import Slot, find_curation, match_questions, unique_id
from deckbuild.importer.prose import answer_sha, code_pattern, render_answer, render_full, split_sentences
from deckbuild.importer.seeds import SeedDocument, SeedFormatError, SeedQuestion, normalize_ws, parse_seed
from deckbuild.layout import CARDS_DIR
from deckbuild.yamlload import parse_yaml, to_plain

FALLBACK_TOPIC = "uncategorized::new"
"""Topic for a new seed question nobody curated yet (a warning asks for a real one)."""

SHOWN_SENTENCES = 2
"""A seed-change warning quotes at most this many of the seed's new sentences."""


# --- the import --------------------------------------------------------------------------


@dataclass
class SeedReport:
    """What one seed's import did, by card id."""

    seed: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for the terminal."""
        return (
            f"{self.seed}: {len(self.added)} added, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.missing)} missing"
        )


@dataclass
class ImportReport:
    """Per-seed reports, warnings, and which files were written."""

    seeds: list[SeedReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)

    @property
    def added(self) -> list[str]:
        return [i for s in self.seeds for i in s.added]

    @property
    def updated(self) -> list[str]:
        return [i for s in self.seeds for i in s.updated]

    @property
    def unchanged(self) -> list[str]:
        return [i for s in self.seeds for i in s.unchanged]

    @property
    def missing(self) -> list[str]:
        return [i for s in self.seeds for i in s.missing]


def plan_import(
    project_dir: Path,
    seed_paths: list[Path],
    *,
    curation_path: Path | None = None,
) -> tuple[ImportReport, list[tuple[Path, bytes]]]:
    """What importing the seeds would do, and the bytes of every card file it would rewrite; writes nothing.

    curation_path defaults to project_dir/seeds/curation.yaml.
    Raises SeedFormatError (bad seed), CardsFileError (a cards file it cannot rewrite) or
    ProjectInvalid (an unreadable curation file).
    """
    project_dir = Path(project_dir)
    documents: list[SeedDocument] = [parse_seed(Path(p)) for p in seed_paths]
    slugs: dict[str, Path] = {}
    for document in documents:
        if document.slug in slugs:
            raise SeedFormatError(
                document.path,
                None,
                "E331",
                f"seed {document.slug!r} given twice (also {slugs[document.slug]}): expected each seed document once",
            )
        slugs[document.slug] = document.path
    curation = load_curation(curation_path or project_dir / "seeds" / "curation.yaml")
    code = code_pattern(curation.code_identifiers)
    cards_dir = project_dir / CARDS_DIR
    files = load_cards(cards_dir)
    before = copy.deepcopy(files)

    all_ids = {str(c.get("id")) for cards in files.values() for c in cards if "id" in c}
    managed: list[Slot] = [
        Slot(path, card)
        for path, cards in files.items()
        for card in cards
        if isinstance(card.get("origin"), dict) and "question" in card
    ]
    used_curation = set(all_ids)
    report = ImportReport()
    new_cards: list[tuple[Slot, CurationEntry | None]] = []

    for document in documents:
        seed_report = SeedReport(document.slug)
        report.seeds.append(seed_report)
        candidates = [s for s in managed if s.card["origin"].get("seed") == document.slug]
        questions = list(document.questions)
        matched, missing = match_questions(questions, candidates)
        for index, seed_q in enumerate(questions):
            slot = matched.get(index)
            if slot is None:
                entry = find_curation(seed_q, curation, used_curation)
                card = _new_card(seed_q, entry, curation, code, all_ids)
                if entry is not None:
                    used_curation.add(entry.id)
                else:
                    report.warnings.append(
                        f"{seed_q.ref}: new question without curation; gave card "
                        f"'{card['id']}' topic {FALLBACK_TOPIC} - choose its topics by hand"
                    )
                all_ids.add(card["id"])
                path = topic_file(cards_dir, card["topics"])
                files.setdefault(path, []).append(card)
                new_cards.append((Slot(path, card), entry))
                seed_report.added.append(card["id"])
                continue
            old = dict(slot.card)
            old_origin = dict(slot.card["origin"])
            _update_card(slot.card, seed_q, curation, code)
            warning = _seed_change_warning(slot.card, seed_q, curation, code)
            if warning is not None:
                report.warnings.append(warning)
            if slot.card != old or slot.card["origin"] != old_origin:
                seed_report.updated.append(str(slot.card["id"]))
            else:
                seed_report.unchanged.append(str(slot.card["id"]))
        for slot in missing:
            seed_report.missing.append(str(slot.card["id"]))
            report.warnings.append(
                f"{slot.card.get('source', document.slug)}: question no longer in "
                f"{document.path}; kept card '{slot.card['id']}' "
                f"({slot.card['origin'].get('question')!r}) - delete it by hand if intended"
            )

    _link_new_cards(files, new_cards, curation, all_ids)

    writes: list[tuple[Path, bytes]] = []
    for path, cards in sorted(files.items()):
        managed_positions = [i for i, c in enumerate(cards) if isinstance(c.get("origin"), dict)]
        ordered = sorted((cards[i] for i in managed_positions), key=sort_key)
        for position, card in zip(managed_positions, ordered, strict=True):
            cards[position] = card
        if path in before and cards == before[path]:
            continue  # unchanged data: leave the file's bytes (and hand formatting) alone
        text = dump_cards(cards)
        if to_plain(parse_yaml(text, path.name)[0]) != cards:  # pragma: no cover - a dumper bug, never data
            raise CardsFileError(path, "E342", "YAML round trip changed the cards; not written")
        writes.append((path, text.encode("utf-8")))
    return report, writes


def _new_card(
    seed_q: SeedQuestion,
    entry: CurationEntry | None,
    curation: Curation,
    code: re.Pattern[str] | None,
    taken: set[str],
) -> dict[str, Any]:
    """A fresh card for a seed question, with curated id/topics/tags when there are some."""
    if entry is not None and CARD_ID_PATTERN.match(entry.id) and entry.id not in taken:
        card_id = entry.id
    else:
        card_id = unique_id(slug_for_question(seed_q.question), taken)
    answer, details = render_answer(seed_q, curation, code)
    tags = ([f"level::{seed_q.level}"] if seed_q.level else []) + list(entry.tags if entry else ())
    card: dict[str, Any] = {
        "id": card_id,
        "question": seed_q.question,
        "answer": answer,
        "details": details,
        "difficulty": seed_q.difficulty,
        "topics": list(entry.topics) if entry and entry.topics else [FALLBACK_TOPIC],
        "source": seed_q.ref,
        "tags": tags or None,
        "missing_code": True if entry is not None and entry.missing_code else None,
        "origin": {
            "seed": seed_q.document,
            "question": seed_q.question,
            "answer_sha": answer_sha(seed_q),
        },
    }
    return {k: v for k, v in card.items() if v is not None}


def _update_card(
    card: dict[str, Any],
    seed_q: SeedQuestion,
    curation: Curation,
    code: re.Pattern[str] | None,
) -> None:
    """Follow the seed's question, source and answer hash; gist, details and every other curated key stay."""
    origin = card["origin"]
    if (
        normalize_ws(str(card.get("question", ""))) == normalize_ws(str(origin.get("question", "")))
        and normalize_ws(card["question"]) != seed_q.question
    ):
        card["question"] = seed_q.question  # not hand-edited: follow the seed's rewording
    sha = answer_sha(seed_q)
    # Gist and details are the curator's once the card exists: a seed correction copied
    # over them would bring back every claim the curation fixed.  `details_sha` remembers
    # the seed answer they were curated against while it differs from the seed's current
    # one (absent: the same as `answer_sha`), so the change is reported until reviewed.
    curated_against = str(origin.get("details_sha", origin.get("answer_sha", sha)))
    set_key(card, "source", seed_q.ref)
    new_origin: dict[str, Any] = {
        "seed": seed_q.document,
        "question": seed_q.question,
        "answer_sha": sha,
    }
    merged = {k: v for k, v in origin.items() if k != "details_sha"} | new_origin
    if curated_against != sha:
        merged["details_sha"] = curated_against
    if origin != merged:
        card["origin"] = merged


def _seed_change_warning(
    card: dict[str, Any], seed_q: SeedQuestion, curation: Curation, code: re.Pattern[str] | None
) -> str | None:
    """What a seed answer that changed since the card's curation says that the card does not, or None."""
    origin = card["origin"]
    if "details_sha" not in origin:
        return None
    on_card = {_sentence_key(s) for s in _sentences(f"{card.get('answer', '')}\n\n{card.get('details', '')}")}
    new = [s for s in _sentences(render_full(seed_q, curation, code)) if _sentence_key(s) not in on_card]
    shown = "; ".join(f"«{s}»" for s in new[:SHOWN_SENTENCES])
    more = f" (+{len(new) - SHOWN_SENTENCES} more)" if len(new) > SHOWN_SENTENCES else ""
    what = f"the seed now says, and the card does not: {shown}{more}" if new else "the seed only dropped text"
    return (
        f"{seed_q.ref}: the seed answer changed since card '{card['id']}' was curated "
        f"(origin.details_sha {origin['details_sha']}, seed now {origin['answer_sha']}); its gist "
        f"and details are kept: {what}. Review them, then delete origin.details_sha"
    )


def _sentences(markdown_text: str) -> list[str]:
    return [s for block in re.split(r"\n\s*\n|\n- ", markdown_text) for s in split_sentences(normalize_ws(block)) if s]


def _sentence_key(sentence: str) -> str:
    return re.sub(r"[^\w]+", " ", sentence.lower()).strip()


def _link_new_cards(
    files: dict[Path, list[dict[str, Any]]],
    new_cards: list[tuple[Slot, CurationEntry | None]],
    curation: Curation,
    all_ids: set[str],
) -> None:
    """Curated links touching a new card, in both directions, to cards that exist now.

    Links between two cards that already existed are never re-added (a person may have
    removed them on purpose).
    """
    by_id = {str(c.get("id")): c for cards in files.values() for c in cards}
    new_ids = {slot.card["id"] for slot, _ in new_cards}
    for slot, entry in new_cards:
        if entry is None:
            continue
        card = slot.card
        related = [r for r in entry.related if r in all_ids and r != card["id"]]
        set_key(card, "related", related or None)
        if entry.duplicate_of and entry.duplicate_of in all_ids:
            set_key(card, "duplicate_of", entry.duplicate_of)
    for entry in curation.entries:
        owner = by_id.get(entry.id)
        if owner is None or entry.id in new_ids:
            continue
        added = [r for r in entry.related if r in new_ids and r not in (owner.get("related") or [])]
        if added:
            order = {r: i for i, r in enumerate(entry.related)}
            merged = list(owner.get("related") or []) + added
            merged.sort(key=lambda r: order.get(r, len(order)))
            set_key(owner, "related", merged)
        if entry.duplicate_of in new_ids and "duplicate_of" not in owner:
            set_key(owner, "duplicate_of", entry.duplicate_of)
