"""The ``numa-exporter`` command: a click group; thin commands that validate and call run()."""

from __future__ import annotations

import click

from exporter import __version__
from exporter.commands import observe_command, run_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="numa-exporter")
def main() -> None:
    """numa-exporter: publish each pod's NUMA placement, read from the kubelet.

    Reads the kubelet podresources API and sysfs on one node and writes
    kai.scheduler/numa-placement-observed and kai.scheduler/numa-memory-groups-observed
    onto the node's pods.
    """


for _command in (run_command, observe_command):
    main.add_command(_command)
