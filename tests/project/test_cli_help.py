"""Every command's `--help` works: each parser and subparser of ingest, taxonomy and stats formats
its help (argparse expands `%` in help strings, so a stray `%` crashes `--help`), and the commands
a user types print it and exit 0."""

from __future__ import annotations

import argparse

import pytest

from conftest import run_module


def _parsers() -> dict[str, argparse.ArgumentParser]:
    from ingest import cli as ingest_cli
    from stats import cli as stats_cli
    from taxonomy import cli as taxonomy_cli

    # `ingest export` and `ingest merge` are dispatched on argv before argparse: their own parsers
    return {
        "ingest": ingest_cli.build_parser(),
        "ingest export": ingest_cli.build_export_parser(),
        "ingest merge": ingest_cli.build_merge_parser(),
        "taxonomy": taxonomy_cli.build_parser(),
        "stats": stats_cli.build_parser(),
    }


def _walk(name: str, parser: argparse.ArgumentParser):
    """(command, parser) for the parser and every subparser below it."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _walk(f"{name} {sub_name}", sub)


def every_command() -> list[tuple[str, argparse.ArgumentParser]]:
    return [pair for name, parser in _parsers().items() for pair in _walk(name, parser)]


def test_the_walk_finds_every_subcommand():
    names = [name for name, _ in every_command()]
    assert names == [
        "ingest", "ingest export", "ingest merge",
        "taxonomy", "taxonomy analyze", "taxonomy verify", "taxonomy classify", "taxonomy agreement",
        "taxonomy labels", "taxonomy review-sample", "taxonomy calibrate", "taxonomy discover",
        "stats", "stats accuracy", "stats signatures", "stats power", "stats leaderboard", "stats compare", "stats report", "stats mcp",
    ]


@pytest.mark.parametrize("name,parser", every_command(), ids=[n for n, _ in every_command()])
def test_every_parser_formats_its_help(name, parser):
    text = parser.format_help()
    assert text.startswith("usage: python -m "), text[:200]
    # a subcommand's one-line help is formatted in its parent's help: the parent covers it
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                assert choice.dest in text


@pytest.mark.parametrize("command", [name for name, _ in every_command()])
def test_help_from_the_command_line(command):
    out = run_module(*command.split(), "--help", timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: python -m {command}"), out.stdout[:200]
    assert "Traceback" not in out.stderr
