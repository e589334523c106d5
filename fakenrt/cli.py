"""The ``fakenrt`` command: a click group; each family of commands lives in its own module
under :mod:`fakenrt.commands`."""

from __future__ import annotations

import click

from fakenrt import __version__
from fakenrt.commands.controller import controller
from fakenrt.commands.demo import demo
from fakenrt.commands.deviceplugin import device_plugin
from fakenrt.commands.draplugin import dra_plugin
from fakenrt.commands.harness import harness
from fakenrt.commands.kubelet import kubelet
from fakenrt.commands.nrt import nrt
from fakenrt.commands.realnode import realnode
from fakenrt.commands.scheduler import scheduler
from fakenrt.commands.simulate import simulate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="fakenrt")
def main() -> None:
    """fakenrt: NUMA nodes without NUMA hardware.

    The main job: `fakenrt simulate` compares scheduling strategies on a whole simulated
    GPU cluster. Also node profiles, a kubelet Topology Manager simulator, NRT objects,
    fake nodes with podresources sockets, and a reference NUMA scheduler plugin.
    """


for _command in (
    simulate,
    demo,
    kubelet,
    nrt,
    controller,
    scheduler,
    harness,
    device_plugin,
    dra_plugin,
    realnode,
):
    main.add_command(_command)
