"""check, build, release, push, status and import: each the plan plus a small consumer (the CLI calls these)."""

from __future__ import annotations

import contextlib
import functools
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from deckbuild.apply import apply, settle
from deckbuild.changeset import Changeset
from deckbuild.errors import DeckbuildError, Problem, problem_order
from deckbuild.incremental.uptodate import up_to_date
from deckbuild.model import Progress
from deckbuild.plan import plan
from deckbuild.plan_result import Plan, Summary, changeset

if TYPE_CHECKING:
    from deckbuild.collection.push import PushReport
    from deckbuild.collection.status import StatusReport
    from deckbuild.importer.update import ImportReport
    from deckbuild.release.versioning import Changes


@dataclass(frozen=True)
class Built:
    """A build's outcome: its plan (config, notes, ...) and whether the package was (re)written."""

    plan: Plan
    written: bool

    @property
    def summary(self) -> Summary:
        assert self.plan.summary is not None
        return self.plan.summary

    @property
    def path(self) -> Path:
        return self.summary.package

    @property
    def notes(self) -> int:
        return self.summary.notes

    @property
    def cards(self) -> int:
        return self.summary.cards

    @property
    def media(self) -> int:
        return self.summary.media

    @functools.cached_property
    def changes(self) -> Changeset:
        """What this build ships that the last one did not, or ships differently."""
        return changeset(self.plan)

    @property
    def changed_notes(self) -> int:
        return len(self.changes.notes)

    @property
    def changed_line(self) -> str:
        """The build line's account of what changed since the last build."""
        return "nothing changed" if self.plan.up_to_date else changed_since_last_build(self.changes)

    @property
    def variants(self) -> tuple[tuple[Path, int], ...]:
        """The variants' packages it wrote (deck.yaml's `variants:`), with their note counts."""
        return self.plan.variants


def changed_since_last_build(changes: Changeset) -> str:
    """The build line's "N notes changed": every note added, changed, renamed or newly shipped retired."""
    return f"{len(changes.notes)} notes changed"


def check(root: Path, *, allow_identity_change: bool = False) -> list[Problem]:
    """Every problem in the project, sorted by place; writes nothing (the cache is only read)."""
    return checked(root, allow_identity_change=allow_identity_change)[0]


def checked(root: Path, *, allow_identity_change: bool = False) -> tuple[list[Problem], list[tuple[Problem, str]]]:
    """`check`'s problems, and the learning-lint warnings cards silence (each with its reason)."""
    from deckbuild.validate import silenced_problems

    settle(root, writing=False)
    checked_plan = plan(root, "check", allow_identity_change=allow_identity_change)
    silenced = [found for card in checked_plan.cards if card.lint for found in silenced_problems(card)]
    return list(checked_plan.problems), sorted(silenced, key=lambda pair: problem_order(pair[0]))


def build(
    root: Path,
    *,
    force: bool = True,
    strict: bool = False,
    allow_identity_change: bool = False,
    jobs: int | None = None,
    progress: Progress | None = None,
    variant: str | None = None,
) -> Built:
    """Validate everything, then write the record, `<output>/<slug>-<version>.apkg` and every
    variant's package (all or nothing).

    `force=False`: nothing is done when the last build's outputs are still current.
    `variant`: write only that variant's package (and the record).
    """
    settle(root, writing=True)
    planned = plan(
        root,
        "build",
        force=force,
        strict=strict,
        allow_identity_change=allow_identity_change,
        jobs=jobs,
        progress=progress,
        variant=variant,
    )
    applied = apply(planned)
    return Built(planned, planned.package in applied.written)


@dataclass(frozen=True)
class Released:
    """A release's outcome: the decision (version, changes) and the build it wrote."""

    plan: Plan
    build: Built

    @property
    def version(self) -> str:
        decision = self.plan.release or self.plan.variant_release
        assert decision is not None
        return decision.version

    @property
    def changes(self) -> Changes:
        decision = self.plan.release or self.plan.variant_release
        assert decision is not None
        return decision.changes

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return self.plan.problems


def release(
    root: Path,
    *,
    bump: str | None = None,
    allow_schema_change: bool = False,
    allow_identity_change: bool = False,
    progress: Progress | None = None,
    variant: str | None = None,
) -> Released:
    """Record a release: the next version, its snapshot, the changelog, deck.yaml's version, the package.

    `variant`: release that variant alone (release/variants.py): its version, its snapshot
    and changelog, its package; the full deck's are left as they are.
    """
    settle(root, writing=True)
    planned = plan(
        root,
        "release",
        bump=bump,
        allow_schema_change=allow_schema_change,
        allow_identity_change=allow_identity_change,
        progress=progress,
        variant=variant,
    )
    applied = apply(planned)
    return Released(planned, Built(planned, planned.package in applied.written))


def push(collection: Path, root: Path, *, dry_run: bool = False, variant: str | None = None) -> PushReport:
    """Build (a no-op when nothing changed), then push the package (or a variant's) into a learner's collection.

    A dry run builds in a private copy of the project, so it writes no file of the project either.
    """
    from deckbuild.collection.push import push as push_package
    from deckbuild.collection.shipped import released_versions

    settle(root, writing=not dry_run)
    with _package(root, variant, private=dry_run) as (package, key, version):
        return push_package(
            collection, package, namespace=key, version=version, released=released_versions(root), dry_run=dry_run
        )


def status(collection: Path, root: Path, *, variant: str | None = None) -> StatusReport:
    """Compare a learner's collection with the package (or a variant's), built in a private copy of
    the project: status writes no file of the project (dist/ and deckbuild.lock included)."""
    from deckbuild.collection.status import status as collection_status

    settle(root, writing=False)
    with _package(root, variant, private=True) as (package, key, _version):
        return collection_status(collection, package, namespace=key)


@contextlib.contextmanager
def _package(root: Path, variant: str | None, *, private: bool) -> Iterator[tuple[Path, str, str]]:
    """The package to push (its path, record key and version): the last build's if it is current,
    else built in place; or (private: status, a dry run) built in a temporary copy of the project
    that is deleted afterwards, so that no file of the project changes, not even the cache."""
    if not private:
        # The up-to-date check may refresh the cache's file signatures: so only where push writes anyway.
        current = up_to_date(root) if variant is None else None
        from deckbuild.config import load_config  # YAML only when a push needs the config; a no-op build stays light

        config = load_config(root)[0] if current is not None else None
        if current is not None and config is not None:
            yield current[0], config.namespace, config.version
            return
        built = build(root, variant=variant)
        yield (built.path, *_pushed_as(built, variant))
        return
    with tempfile.TemporaryDirectory(prefix="deckbuild-") as tmp:
        copy = Path(tmp) / root.resolve().name
        shutil.copytree(root, copy, ignore=lambda folder, names: _PRIVATE_SKIP & set(names) if Path(folder) == root else set())
        built = build(copy, variant=variant)
        yield (built.path, *_pushed_as(built, variant))


_PRIVATE_SKIP = {"dist", ".git"}
"""What a private build's copy of the project leaves out: the outputs, and the repository."""


def _pushed_as(built: Built, variant: str | None) -> tuple[str, str]:
    """The key of the collection's push record and the version: the deck's, or a variant's own
    (a variant's pushes are recorded apart, so pushing it never moves the full deck's cards)."""
    config = built.plan.config
    assert config is not None  # a forced build plans the whole project
    chosen = config.variant(variant) if variant is not None else None
    if chosen is None:
        return config.namespace, config.version
    return f"{config.namespace}/{chosen.key}", chosen.version


def import_seeds(project_dir: Path, seed_paths: list[Path]) -> ImportReport:
    """Import seeds into project_dir/cards: the import plan, then apply; all files or none.

    Raises SeedFormatError (bad seed), CardsFileError (unreadable cards file) or, when a
    card file cannot be written, E140 (nothing written).
    """
    settle(Path(project_dir), writing=True)
    planned = plan(Path(project_dir), "import", seeds=seed_paths)
    assert planned.imported is not None
    planned.imported.written.extend(apply(planned).written)
    return planned.imported


def run_import(project_dir: Path, seed_paths: list[Path], echo: Callable[[str], None]) -> int:
    """The CLI's `deckbuild import`: summary per seed, warnings, exit code (0 ok, 1 error)."""
    try:
        report = import_seeds(Path(project_dir), [Path(p) for p in seed_paths])
    except DeckbuildError as exc:  # a bad seed, cards file or curation file
        for line in [p.format() for p in exc.problems()] or [str(exc)]:
            echo(f"error: {line}")
        echo("nothing written to cards/")
        return exc.exit_code
    for warning in report.warnings:
        echo(f"warning: {warning}")
    for seed_report in report.seeds:
        echo(seed_report.summary())
    return 0
