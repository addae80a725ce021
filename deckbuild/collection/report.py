"""The text reports of `push` and `status` (their JSON is the reports' to_json())."""

from __future__ import annotations

from deckbuild.collection.push import PushReport
from deckbuild.collection.status import StatusReport


def push_text(report: PushReport) -> str:
    """What a push did, or for a dry run what it would do (in the conditional: nothing was written)."""
    dry = report.dry_run
    head = "dry run, nothing written" if dry else "pushed"
    since = f" (was {report.previous_version})" if report.previous_version else ""
    lines = [
        f"{head}: {report.version}{since} into {report.collection}",
        f"  {'would add' if dry else 'new'} {report.new}, {'would update' if dry else 'updated'} {report.updated},"
        f" unchanged {report.unchanged}, retired still active {report.retired}, conflicting {report.conflicting}",
    ]
    if report.author:
        lines.append(f"  {report.author} field(s) {'would take' if dry else 'took'} the author's change")
    for item in report.overwritten:
        doubt = "" if item.certain else " (no record of what was shipped to this collection: it may be an earlier build's text)"
        where = (
            f"its whole text is in {report.backup}"
            if report.backup
            else f"its whole text would be in the backup made first, in {report.backup_folder}"
        )
        more = "…" if item.length > len(item.learner_text) else ""
        lines.append(
            f"  {'would be overwritten' if dry else 'overwritten'}: {item.id}: {item.field}:"
            f" your text {item.learner_text!r}{more}{doubt}; {where}"
        )
    for card_id, name in report.kept:
        lines.append(f"  kept: {card_id}: {name}: your change (the author did not change this field)")
    for move in report.moved:
        verb = "would move" if dry else "moved"
        lines.append(f"  {verb}: {move.id}: {move.cards} card(s) from '{move.old}' to '{move.new}' (history kept)")
    if report.media:
        verb = "would deliver" if dry else "delivered"
        lines.append(f"  media: {verb} {len(report.media)} file(s) the collection lacked: {', '.join(report.media)}")
    if report.conflicting:
        verb = "would not be" if dry else "were not"
        lines.append(f"  conflicting notes use a note type whose fields differ from the package's; they {verb} updated")
    if report.full_sync:
        lines.append("  the note types' schema changed: Anki will ask for a full sync (upload this collection)")
    lines.append(f"  backup: {report.backup}" if report.backup else f"  a backup would be made in {report.backup_folder}")
    return "\n".join(lines)


def status_text(report: StatusReport) -> str:
    lines = [f"{report.source}: shipped {report.version or '(no push recorded; compared with the sources)'}"]
    lines.append(
        f"  edited {len(report.edited)}, missing {len(report.missing)}, retired still active"
        f" {len(report.retired_active)}, suspended cards {report.suspended}, notes with personal text {report.personal},"
        f" media files missing {len(report.missing_media)}"
    )
    for item in report.edited:
        for name in item.fields:
            lines.append(f"  edited: {item.id}: {name}\n    shipped: {item.shipped[name]}\n    now:     {item.current[name]}")
    lines += [f"  missing: {card_id}" for card_id in report.missing]
    lines += [f"  retired but active: {card_id}" for card_id in report.retired_active]
    lines += [f"  media missing: {name} (a push delivers it)" for name in report.missing_media]
    return "\n".join(lines)
