"""``fakenrt realnode``: profile nodes as real-kubelet Kind nodes (docs/real-kubelet.md).

``fakenrt realnode render`` writes, per profile node, the machine files a real kubelet
reads for its topology and its KubeletConfiguration, plus a Kind cluster config with one
worker per node and the fake device plugin Pods.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from fakenrt.commands.kubelet import InputError, pick_node
from fakenrt.commands.params import Directory, Image, KindClusterName, Name
from fakenrt.profiles import ProfileError, load_profiles
from fakenrt.realnode.machine import RenderError
from fakenrt.realnode.writing import render_cluster
from fakenrt.textfiles import TextFileError, read_text

DEFAULT_CLUSTER = "numa-testkit-realnode"
DEFAULT_IMAGE = "numa-testkit/numa-testkit:local"


def run(
    *, profile_path: str, nodes: Sequence[str], out: Path, cluster: str, image: str
) -> list[Path]:
    try:
        profiles = load_profiles(profile_path)
        text = read_text(profile_path)
    except ProfileError as exc:
        raise InputError(str(exc)) from None
    except TextFileError as exc:  # changed since it was read
        raise InputError(str(exc)) from None
    chosen = [pick_node(profiles, n, source=profile_path) for n in nodes] or list(profiles)
    try:
        return render_cluster(
            nodes=chosen, out=out, cluster=cluster, profiles_text=text, image=image
        )
    except RenderError as exc:
        raise InputError(f"{profile_path}: {exc}") from None


@click.group()
def realnode() -> None:
    """Profile nodes as real-kubelet nodes in a Kind cluster."""


@realnode.command("render")
@click.option("--profile", "profile_path", required=True, help="Node profile file (YAML).")
@click.option(
    "--node",
    "nodes",
    type=Name(),
    multiple=True,
    help="Node of the profile to render (repeatable; default: every node).",
)
@click.option(
    "--out",
    required=True,
    type=Directory(),
    help="Output directory: one sub-directory per node, kind-cluster.yaml, "
    "device-plugins.yaml, dra-plugins.yaml for nodes with DRA drivers (a node's directory "
    "is replaced).",
)
@click.option(
    "--cluster",
    type=KindClusterName(),
    default=DEFAULT_CLUSTER,
    show_default=True,
    help="The Kind cluster's name.",
)
@click.option(
    "--image",
    type=Image(),
    default=DEFAULT_IMAGE,
    show_default=True,
    help="The project image the device plugin Pods run (loaded into the cluster).",
)
def render(
    *, profile_path: str, nodes: tuple[str, ...], out: Path, cluster: str, image: str
) -> None:
    """Write the machine files, KubeletConfiguration and Kind config of profile nodes."""
    try:
        written = run(profile_path=profile_path, nodes=nodes, out=out, cluster=cluster, image=image)
    except (InputError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    for path in written:
        click.echo(str(path))
