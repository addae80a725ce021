"""The text reports of `push` and `status` (their JSON is the reports' to_json())."""

from __future__ import annotations

from deckbuild.collection.push import PushReport
from deckbuild.collection.status import StatusReport


def push_text(report: PushReport) -> str:
    head = "dry run, nothing written" if report.dry_run else "pushed"
    since = f" (was {report.previous_version})" if report.previous_version else ""
    lines = [
        f"{head}: {report.version}{since} into {report.collection}",
        f"  new {report.new}, updated {report.updated}, unchanged {report.unchanged},"
        f" retired still active {report.retired}, conflicting {report.conflicting}",
    ]
    for item in report.overwritten:
        lines.append(
            f"  overwritten: {item.id}: {', '.join(item.fields)} (you and the sources both changed it; your text is in the backup)"
        )
    for move in report.moved:
        lines.append(f"  moved: {move.id}: {move.cards} card(s) from '{move.old}' to '{move.new}' (history kept)")
    if report.conflicting:
        lines.append("  conflicting notes use a note type whose fields differ from the package's; they were not updated")
    if report.full_sync:
        lines.append("  the note types' schema changed: Anki will ask for a full sync (upload this collection)")
    if report.backup:
        lines.append(f"  backup: {report.backup}")
    return "\n".join(lines)


def status_text(report: StatusReport) -> str:
    lines = [f"{report.source}: shipped {report.version or '(no push recorded; compared with the sources)'}"]
    lines.append(
        f"  edited {len(report.edited)}, missing {len(report.missing)}, retired still active"
        f" {len(report.retired_active)}, suspended cards {report.suspended}, notes with personal text {report.personal}"
    )
    for item in report.edited:
        for name in item.fields:
            lines.append(f"  edited: {item.id}: {name}\n    shipped: {item.shipped[name]}\n    now:     {item.current[name]}")
    lines += [f"  missing: {card_id}" for card_id in report.missing]
    lines += [f"  retired but active: {card_id}" for card_id in report.retired_active]
    return "\n".join(lines)
