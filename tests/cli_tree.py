"""Both console scripts as one shape for the tests that walk them (help texts, the docs'
synopses): ``fakenrt`` is a click group, ``numa-exporter`` an argparse parser."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import click

from exporter.cli import build_parser
from fakenrt.cli import main as fakenrt_main


@dataclass(frozen=True)
class Option:
    names: tuple[str, ...]
    help: str | None
    hidden: bool = False


@dataclass(frozen=True)
class Command:
    help: str | None
    options: tuple[Option, ...] = ()
    commands: dict[str, Command] = field(default_factory=dict)

    def walk(self, path: str) -> list[tuple[str, Command]]:
        found = [(path, self)]
        for name, sub in self.commands.items():
            found.extend(sub.walk(f"{path} {name}"))
        return found


def _from_click(command: click.Command) -> Command:
    options = tuple(
        Option((*p.opts, *p.secondary_opts), p.help, p.hidden)
        for p in command.params
        if isinstance(p, click.Option)
    )
    subs: dict[str, click.Command] = {}
    if isinstance(command, click.Group):  # fakenrt's imports its commands when asked
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            subs[name] = sub
    return Command(
        command.help or command.short_help,
        options,
        {name: _from_click(sub) for name, sub in subs.items()},
    )


def _from_argparse(parser: argparse.ArgumentParser, help_: str | None) -> Command:
    options: list[Option] = []
    commands: dict[str, Command] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                commands[name] = _from_argparse(sub, helps.get(name))
        elif action.option_strings and not isinstance(action, argparse._HelpAction):
            options.append(
                Option(tuple(action.option_strings), action.help, action.help == argparse.SUPPRESS)
            )
    return Command(help_ or parser.description, tuple(options), commands)


def scripts() -> dict[str, Command]:
    """Console script name -> its command tree."""
    return {
        "fakenrt": _from_click(fakenrt_main),
        "numa-exporter": _from_argparse(build_parser(), None),
    }
