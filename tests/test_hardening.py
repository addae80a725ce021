"""Small regression tests for the hardening fixes that the corpus does not show by itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from deckbuild.cli import main
from deckbuild.render import markdown_html
from deckbuild.yamlload import parse_yaml


def test_internal_error_is_one_line_and_exit_2(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug (not a user's mistake) gives 'internal error ... please report', never a traceback."""
    import deckbuild.commands

    def broken(_root: Path, **_options: object) -> list[object]:
        raise RuntimeError("boom")

    monkeypatch.delenv("DECKBUILD_DEBUG", raising=False)
    monkeypatch.setattr(deckbuild.commands, "checked", broken)  # what `deckbuild check` calls
    result = CliRunner().invoke(main, ["check", "-C", str(sample)])
    assert result.exit_code == 2
    assert "internal error: RuntimeError: boom" in result.stderr and "please report" in result.stderr
    assert "Traceback" not in result.output


def _project_files(root: Path) -> dict[str, bytes]:
    """Every file of a project but the cache (which may keep good parses), by path."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".deckbuild-cache" not in p.relative_to(root).parts
    }


def _edit_and_misdirect_output(sample: Path) -> None:
    """A new card, and an `output:` that names a file: the package cannot be written."""
    (sample / "cards" / "zz-added.yaml").write_text(
        "- id: added-card\n  question: Added?\n  answer: Yes.\n  difficulty: easy\n  topics: [added::card]\n"
    )
    (sample / "deck.yaml").write_text((sample / "deck.yaml").read_text().replace("output: dist", "output: deck.yaml"))


def test_unwritable_output_is_e161_and_keeps_the_record(sample: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["build", "-C", str(sample)]).exit_code == 0
    _edit_and_misdirect_output(sample)
    before = _project_files(sample)
    result = runner.invoke(main, ["build", "-C", str(sample)])
    assert result.exit_code == 1
    assert "deck.yaml: E161 cannot write" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert _project_files(sample) == before  # the record above all: it must not move ahead of the package


def test_failed_release_writes_nothing(sample: Path) -> None:
    """A release that cannot write its package leaves the snapshot, changelog, deck.yaml and record unwritten."""
    runner = CliRunner()
    assert runner.invoke(main, ["release", "-C", str(sample)]).exit_code == 0
    _edit_and_misdirect_output(sample)
    before = _project_files(sample)
    result = runner.invoke(main, ["release", "-C", str(sample)])
    assert result.exit_code == 1, result.output
    assert "E161" in result.stderr and "Traceback" not in result.output
    assert _project_files(sample) == before


def test_stale_temp_files_of_a_killed_build_are_removed(sample: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["build", "-C", str(sample)]).exit_code == 0
    stale = [sample / ".deckbuild.lock.abc123.tmp", sample / "dist" / ".deckbuild-sample-1.0.0.apkg.xyz.tmp"]
    for path in stale:
        path.write_bytes(b"half")
    # A killed build has already forgotten the up-to-date state, so the next build is real.
    (sample / ".deckbuild-cache" / "build-state.json").unlink()
    assert runner.invoke(main, ["build", "-C", str(sample)]).exit_code == 0
    assert not any(path.exists() for path in stale)


def test_many_unclosed_math_openers_render_in_linear_time() -> None:
    """The math-span regex alone took 19 s on 64 KB of `\\(`; the scanner is linear.

    No timing assertion (the suite has none): a quadratic regression shows as a stall here.
    """
    text = "\\[ x " + "\\( " * 5000
    # Unclosed openers are not math: Markdown treats each backslash as an escape.
    assert markdown_html(text).startswith("<p>[ x ( ( (")


@pytest.mark.parametrize(
    ("text", "shown"),
    [("&lt;b&gt;", "&amp;lt;b&amp;gt;"), ("R&D", "R&amp;D"), ("\\( a & b \\)", "\\( a &amp; b \\)"), ("x\u2063y", "xy")],
)
def test_ampersands_show_literally(text: str, shown: str) -> None:
    assert markdown_html(text, inline=True) == shown


def test_math_spans_match_the_regex_semantics() -> None:
    assert markdown_html("\\(a\\) and \\[b\\] and \\(", inline=True) == "\\(a\\) and \\[b\\] and ("


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("a: " + "9" * 5000, "E106"),
        ("a: 2024-02-30", "E106"),
        ("a: !!python/object/apply:os.system [ls]", "E106"),
        ("a: !!set {x}", "E106"),
        ("a: b\x00", "E100"),
    ],
)
def test_unrepresentable_yaml_is_a_located_problem(text: str, code: str) -> None:
    value, problems = parse_yaml(text, "x.yaml")
    assert value is None
    assert [p.code for p in problems] == [code]
    assert problems[0].location.line == 1
