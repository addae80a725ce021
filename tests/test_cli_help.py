"""`--help` teaches: every command and every option is explained."""

from __future__ import annotations

import click
from click.testing import CliRunner

from deckbuild.cli import main


def test_every_command_and_option_has_help() -> None:
    assert main.help and "deck.yaml" in main.help
    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None and command.help, f"{name} has no help"
        result = CliRunner().invoke(main, [name, "--help"])
        assert result.exit_code == 0
        for param in command.params:
            if isinstance(param, click.Option) and param.name != "help":
                assert param.help, f"{name} {param.opts} has no help"


def test_top_level_help_lists_commands() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for name in ("build", "check"):
        assert name in result.output
