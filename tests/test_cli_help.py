"""Every command and option of both console scripts has help text."""

from __future__ import annotations

import pytest

from tests.cli_tree import scripts


@pytest.mark.parametrize("name", ["numa-exporter", "fakenrt"])
def test_every_command_and_option_has_help(name: str) -> None:
    missing = []
    for path, command in scripts()[name].walk(name):
        if not command.help:
            missing.append(path)
        for option in command.options:
            if not option.help:
                missing.append(f"{path} {option.names[0]}")
    assert missing == []


def test_the_exporter_tree_is_read() -> None:
    """The walk sees the exporter's commands and options (an empty tree passes the test
    above vacuously)."""
    tree = scripts()["numa-exporter"]
    assert sorted(tree.commands) == ["observe", "run"]
    assert ("--node-name",) in {o.names for o in tree.commands["run"].options}
    assert ("--version",) in {o.names for o in tree.options}
