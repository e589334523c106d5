"""The ``fakenrt`` command: a click group; each family of commands lives in its own module."""

from __future__ import annotations

import click

from fakenrt import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="fakenrt")
def main() -> None:
    """fakenrt: NUMA nodes without NUMA hardware.

    Node profiles, a kubelet Topology Manager simulator, NRT objects, fake nodes with
    podresources sockets, and a reference NUMA scheduler plugin.
    """


# Command families register here, one line each.
from fakenrt.commands.nrt import nrt  # noqa: E402

main.add_command(nrt)
from fakenrt.commands.scheduler import scheduler  # noqa: E402

main.add_command(scheduler)
from fakenrt.commands.controller import controller  # noqa: E402

main.add_command(controller)
from fakenrt.commands.kubelet import kubelet  # noqa: E402

main.add_command(kubelet)
from fakenrt.commands.demo import demo  # noqa: E402

main.add_command(demo)
