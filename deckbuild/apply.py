"""apply(plan): a plan's outputs written through the one writer (writer.py), all of them or none.

Under the project lock, every output of the plan goes through one transaction of the
writer (writer.py): staged beside its target, then renamed into place in the plan's order
(a release's snapshot, deck.yaml and CHANGELOG.md, then the record, then the package) under
a journal.  A failure while staging changes nothing; a failed rename puts back every file
replaced before it; a kill between two renames is rolled back from the journal by the next
writing command (`settle`, below) before it plans.  A file that changed since the plan read
it (another deckbuild wrote it in between) is never overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from deckbuild.errors import BuildBusy, LocatedError, Location, WriteFailed
from deckbuild.plan_result import Plan, file_digest


@dataclass(frozen=True)
class Applied:
    """What apply did: the files it replaced (those whose bytes changed), in the order written."""

    written: tuple[Path, ...] = ()


def apply(plan: Plan) -> Applied:
    """Write every output of `plan` atomically; remember a build's state for the next up-to-date check.

    The build cache keeps what the plan taught it only once the outputs are in place."""
    if plan.up_to_date or not plan.outputs:
        plan.keep_cache()
        return Applied()
    try:
        applied = _apply(plan)
    except BaseException:
        plan.drop_cache()
        raise
    plan.keep_cache()
    return applied


def _apply(plan: Plan) -> Applied:
    from deckbuild.incremental import uptodate
    from deckbuild.writer import StagedWrites, make_folder, project_lock, remove_stale_temps

    root = plan.root
    if plan.goal == "import":
        make_folder(root)  # an import may start a project in a new folder
    with project_lock(root):
        _refuse_changed_since_planned(plan)
        try:
            for output in plan.outputs:
                remove_stale_temps(output.path)
            with StagedWrites(root, plan.goal) as writes:
                staged = []
                for output in plan.outputs:
                    if writes.stage(output.path, output.data):
                        staged.append(output.path)
                # A kill from here on must make the next build a real one.
                uptodate.forget_state(root)
                writes.commit()
        except WriteFailed as exc:
            raise _cannot_write(plan, exc) from None
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


def _cannot_write(plan: Plan, exc: WriteFailed) -> LocatedError:
    """The file that could not be written, at its own place, and the cause the OS gave."""
    path = Path(str(exc.path))
    place = _relative(plan.root, path)
    if plan.goal == "import":
        return LocatedError(
            Location(place),
            "E140",
            f"cannot write {place}: {exc.reason}; check cards/ is a writable folder (nothing was written)",
        )
    if exc.step == "in the way":
        return LocatedError(
            Location(place),
            "E166",
            f"cannot replace {place}: {exc.reason}; move or remove it and run again (no file was changed)",
        )
    if exc.step == "replace":
        return LocatedError(
            Location(place),
            "E162",
            f"cannot replace {place}: {exc.reason}; the file itself refuses (immutable, or owned by another user): "
            "make it writable and run again (every file written before it was put back)",
        )
    blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:  # `output:` names a file: that file is the place to fix
        name = _relative(plan.root, blocker)
        return LocatedError(
            Location(name),
            "E161",
            f"cannot write {place}: {name} is a file, not a folder; point `output:` at a folder (no file was changed)",
        )
    return LocatedError(
        Location(place), "E161", f"cannot write {place}: {exc.reason}; check its folder is writable (no file was changed)"
    )


def _relative(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def settle(root: Path, *, writing: bool) -> None:
    """Before a command reads the project: finish with a write a killed deckbuild left half-done.

    A writing command (build, release, import, push, preview, serve) rolls it back from the journal, so that it plans
    from the files as they were before that write (E164 on stderr says which came back); a
    read-only one (check, status, diff, a dry run) changes nothing and stops with E163.
    """
    import sys

    from deckbuild.layout import CACHE_DIR
    from deckbuild.writer import JOURNAL, project_lock, recover, unfinished

    where = f"{CACHE_DIR}/{JOURNAL}"
    pending = unfinished(root)
    if pending is None:
        return
    if not writing:
        names = ", ".join(pending) or "the files it names"
        raise LocatedError(
            Location(where),
            "E163",
            f"a write was interrupted before it finished ({names} may be half-updated); run `deckbuild build` "
            "to put them back as they were before it, then run this command again",
        )
    try:
        with project_lock(root):
            restored = recover(root)
    except WriteFailed as exc:
        raise LocatedError(
            Location(where),
            "E165",
            f"cannot roll back the interrupted write it records: {exc.reason}; restore the files it names from git "
            f"and delete {where}",
        ) from None
    except OSError as exc:
        raise LocatedError(
            Location(where),
            "E165",
            f"cannot roll back the interrupted write it records: {exc.strerror or exc} ({exc.filename}); restore the "
            f"files it names from git and delete {where}",
        ) from None
    sys.stderr.write(
        f"{where}: E164 warning: an interrupted write was rolled back; "
        f"{', '.join(restored) or 'every file it named'} {'is' if len(restored) == 1 else 'are'} as before it\n"
    )
