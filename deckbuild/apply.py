"""apply(plan): the only code that writes a project's files, all of them or none.

Under the project lock, every output of the plan reaches a temp file beside its target
(fsynced) before any is renamed into place, in the plan's order: a release's snapshot,
deck.yaml and CHANGELOG.md, then the record, then the package.  A failure while staging
changes nothing; a kill between two renames leaves a record newer than the package, which
the next build sees (the last build's state was dropped first) and repairs by writing the
same package again.  A file that changed since the plan read it (another deckbuild wrote
it in between) is never overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from deckbuild.errors import BuildBusy, LocatedError, Location
from deckbuild.plan_result import Plan, file_digest


@dataclass(frozen=True)
class Applied:
    """What apply did: the files it replaced (those whose bytes changed), in the order written."""

    written: tuple[Path, ...] = ()


def apply(plan: Plan) -> Applied:
    """Write every output of `plan` atomically; remember a build's state for the next up-to-date check."""
    if plan.up_to_date or not plan.outputs:
        return Applied()
    from deckbuild.fsutil import StagedWrites, project_lock, remove_stale_temps
    from deckbuild.incremental import uptodate

    root = plan.root
    if plan.goal == "import":
        root.mkdir(parents=True, exist_ok=True)  # an import may start a project in a new folder
    with project_lock(root):
        _refuse_changed_since_planned(plan)
        # A kill from here on must make the next build a real one.
        uptodate.forget_state(root)
        output = plan.outputs[0]
        try:
            for output in plan.outputs:
                remove_stale_temps(output.path)
            with StagedWrites() as writes:
                staged = []
                for output in plan.outputs:
                    if writes.stage(output.path, output.data):
                        staged.append(output.path)
                writes.commit()
        except OSError as exc:
            raise _cannot_write(plan, output.place, exc) from None
        if plan.goal == "build" and plan.summary is not None and plan.only_variant is None:
            # A release changes deck.yaml itself, so only a build's fingerprint describes what it wrote.
            from deckbuild.layout import RECORD_FILE

            summary = plan.summary
            counts = {"notes": summary.notes, "cards": summary.cards, "media": summary.media}
            variants = [path for path, _notes in plan.variants]
            uptodate.save_state(
                root, plan.inputs, summary.package, RECORD_FILE, counts, warnings=len(plan.problems), also=variants
            )
    return Applied(tuple(staged))


def _refuse_changed_since_planned(plan: Plan) -> None:
    for output in plan.outputs:
        if output.base is None:
            continue
        now = file_digest(output.path)
        if now != output.base and now != _digest(output.data):
            raise BuildBusy(
                f"another deckbuild is running in {plan.root}, or was: {output.path.relative_to(plan.root).as_posix()} "
                "changed while this one was working; wait for it to finish and run again"
            )


def _digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _cannot_write(plan: Plan, place: str, exc: OSError) -> LocatedError:
    where = Path(exc.filename).name if exc.filename else place
    reason = exc.strerror or str(exc)
    if plan.goal == "import":
        return LocatedError(
            Location(place), "E140", f"cannot write {where}: {reason}; check cards/ is a writable folder (nothing was written)"
        )
    return LocatedError(Location(place), "E161", f"cannot write {where}: {reason}; check the folder is writable")
