"""Every command and option of both console scripts has help text."""

from __future__ import annotations

import click
import pytest

from exporter.cli import main as exporter_main
from fakenrt.cli import main as fakenrt_main


def _walk(command: click.Command, path: str) -> list[tuple[str, click.Command]]:
    found = [(path, command)]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            found.extend(_walk(sub, f"{path} {name}"))
    return found


@pytest.mark.parametrize("root,name", [(exporter_main, "numa-exporter"), (fakenrt_main, "fakenrt")])
def test_every_command_and_option_has_help(root: click.Command, name: str) -> None:
    missing = []
    for path, command in _walk(root, name):
        if not (command.help or command.short_help):
            missing.append(path)
        for param in command.params:
            if isinstance(param, click.Option) and not param.help:
                missing.append(f"{path} {param.opts[0]}")
    assert missing == []
