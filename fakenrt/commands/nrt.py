"""``fakenrt nrt``: NodeResourceTopology objects from node profiles, without an API server."""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml

from fakenrt.nrt import render_nrt
from fakenrt.profiles import ProfileError, load_profiles


@click.group("nrt")
def nrt() -> None:
    """NodeResourceTopology (v1alpha2) objects for fake NUMA nodes."""


@nrt.command("render")
@click.option(
    "--profile",
    "profile_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Node profile file (YAML, see docs/profiles.md).",
)
@click.option(
    "--node",
    "node_names",
    multiple=True,
    help="Render only this node (repeatable); default: every node of the profile.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON list instead of multi-document YAML.",
)
def render(profile_path: Path, node_names: tuple[str, ...], as_json: bool) -> None:
    """Print the NRT objects a profile gives before any pod runs.

    Available amounts already subtract each zone's foreign `allocated` resources. The
    output can be applied with kubectl once the NRT CRD is installed.
    """
    try:
        profiles = load_profiles(profile_path)
    except ProfileError as exc:
        raise click.ClickException(str(exc)) from None
    by_name = {p.name: p for p in profiles}
    unknown = [n for n in node_names if n not in by_name]
    if unknown:
        raise click.BadParameter(
            f"no node {unknown[0]!r} in {profile_path}; nodes: {', '.join(by_name)}",
            param_hint="--node",
        )
    chosen = [by_name[n] for n in dict.fromkeys(node_names)] if node_names else list(profiles)
    objects = [render_nrt(p, usage=None) for p in chosen]
    if as_json:
        click.echo(json.dumps(objects, indent=2))
    else:
        click.echo(yaml.safe_dump_all(objects, sort_keys=False), nl=False)
