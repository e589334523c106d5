"""``fakenrt nrt``: NodeResourceTopology objects from node profiles, without an API server."""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml

from fakenrt.commands.kubelet import new_node_state, pick_node
from fakenrt.commands.podfiles import InputError, read_pods
from fakenrt.kubelet.node import NodeState
from fakenrt.nrt.loaded import (
    bound_pod_manifest,
    foreign_pods,
    observed_annotations,
    render_loaded,
)
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
    "--pod",
    "pod_paths",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Pod manifest YAML (multi-document allowed; repeatable) to admit with the kubelet "
    "simulator first, in order, as `fakenrt kubelet explain` does; the NRT then shows the "
    "loaded node. Needs one node (--node when the profile has several).",
)
@click.option(
    "--pods-out",
    "pods_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --pod: write the pods on the node here (multi-document YAML): the pods "
    "standing for the profile's foreign `allocated`, then the admitted ones, bound to the "
    "node, Running, with the annotations the exporter would write - the --pods-on-node "
    "input of `fakenrt scheduler evaluate`.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON list instead of multi-document YAML.",
)
def render(
    profile_path: Path,
    node_names: tuple[str, ...],
    pod_paths: tuple[str, ...],
    pods_out: Path | None,
    as_json: bool,
) -> None:
    """Print the NRT objects a profile gives before any pod runs, or, with --pod, the NRT
    of one node after the kubelet simulator admitted those pods.

    Available amounts already subtract each zone's foreign `allocated` resources (held by
    one pod per zone, counted in the pod fingerprint, as `fakenrt controller` creates
    them). The output can be applied with kubectl once the NRT CRD is installed. A pod
    the simulator rejects holds nothing; it is named on stderr.
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
    if pods_out is not None and not pod_paths:
        raise click.BadParameter("needs --pod", param_hint="--pods-out")
    if pod_paths:
        objects = [_render_loaded(profile_path, node_names, pod_paths, pods_out)]
    else:
        chosen = [by_name[n] for n in dict.fromkeys(node_names)] if node_names else profiles
        try:
            objects = [render_loaded(NodeState.from_profile(p)) for p in chosen]
        except ValueError as exc:
            raise click.ClickException(f"{profile_path}: {exc}") from None
    if as_json:
        click.echo(json.dumps(objects, indent=2))
    else:
        click.echo(yaml.safe_dump_all(objects, sort_keys=False), nl=False)


def _render_loaded(
    profile_path: Path,
    node_names: tuple[str, ...],
    pod_paths: tuple[str, ...],
    pods_out: Path | None,
) -> dict[str, object]:
    if len(set(node_names)) > 1:
        raise click.BadParameter("one node only with --pod", param_hint="--node")
    try:
        profile = pick_node(
            load_profiles(profile_path),
            node_names[0] if node_names else None,
            source=str(profile_path),
        )
        pods = read_pods(pod_paths)
        state = new_node_state(profile, source=str(profile_path))
    except (InputError, ProfileError) as exc:
        raise click.ClickException(str(exc)) from None
    admitted = []
    for pod in pods:
        result = state.admit(pod)
        if result.admit and result.allocation is not None:
            admitted.append((pod, result.allocation))
        else:
            click.echo(f"pod {pod.key} rejected: {result.reason}: {result.message}", err=True)
    if pods_out is not None:
        manifests = [
            bound_pod_manifest(
                pod, node=profile.name, annotations=observed_annotations(profile, allocation)
            )
            for pod, allocation in (*foreign_pods(state), *admitted)
        ]
        try:
            pods_out.write_text(yaml.safe_dump_all(manifests, sort_keys=False))
        except OSError as exc:
            raise click.ClickException(f"{pods_out}: cannot write: {exc.strerror}") from None
    return render_loaded(state)
