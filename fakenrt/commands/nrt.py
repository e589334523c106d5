"""``fakenrt nrt``: NodeResourceTopology objects from node profiles, without an API server."""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml

from exporter.validation import quoted
from fakenrt.commands.kubelet import new_node_state, pick_node
from fakenrt.commands.params import (
    DURATION,
    DURATION_HELP,
    BindAddress,
    Duration,
    Name,
    NodePath,
    OutputFile,
    listed,
)
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
    type=Name(),
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
    type=OutputFile(),
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
            f"no node {quoted(unknown[0])} in {profile_path}; nodes: {listed(list(by_name))}",
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


@nrt.command("publish")
@click.option(
    "--node",
    "node_name",
    type=Name(),
    envvar="NODE_NAME",
    help="The node to publish for: its NodeResourceTopology is named after it "
    "(default: $NODE_NAME, as the DaemonSet sets it from the downward API).",
)
@click.option(
    "--podresources-socket",
    type=NodePath(socket=True),
    default=Path("/var/lib/kubelet/pod-resources/kubelet.sock"),
    show_default=True,
    help="The kubelet's podresources socket (GetAllocatableResources and List are read "
    "every poll).",
)
@click.option(
    "--sysfs-root",
    type=NodePath(directory=True),
    default=Path("/sys"),
    show_default=True,
    help="The host's /sys: NUMA nodes from devices/system/node/node<N>/ (cpulist, "
    "distance, meminfo, hugepages), as numa-exporter's --sysfs-root.",
)
@click.option(
    "--kubelet-config",
    type=NodePath(),
    default=Path("/var/lib/kubelet/config.yaml"),
    show_default=True,
    help="The kubelet's KubeletConfiguration file: Topology Manager policy and scope, "
    "CPU and Memory Manager policies, reservedSystemCPUs.",
)
@click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    envvar="KUBECONFIG",
    help="Kubeconfig of the cluster (default: $KUBECONFIG, in-cluster config, ~/.kube/config).",
)
@click.option(
    "--delay",
    "delay_s",
    type=DURATION,
    default=0.0,
    show_default=True,
    help="Delay before a change of the node shows in its NRT (0: at the next poll, "
    "jitter ignored). " + DURATION_HELP,
)
@click.option(
    "--jitter",
    "jitter_s",
    type=DURATION,
    default=0.0,
    show_default=True,
    help="Extra random delay per change, uniform in [0, jitter].",
)
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed of the jitter's random source (default: unseeded).",
)
@click.option(
    "--poll-interval",
    "poll_interval_s",
    type=Duration(positive=True, maximum=3600),
    default=1.0,
    show_default=True,
    help="How often the node is read.",
)
@click.option(
    "--health-bind-address",
    type=BindAddress(optional=True),
    default="",
    help="host:port (or :port) serving /healthz (the poll loop runs) and /readyz (the "
    "last polls read the node and reached the API server). Default: no server.",
)
@click.option(
    "--resync-interval",
    "resync_interval_s",
    type=DURATION,
    default=60.0,
    show_default=True,
    help="Write the visible object again this often even unchanged, repairing edits or "
    "deletion by others (0: never).",
)
@click.option(
    "--topology-policies/--no-topology-policies",
    default=True,
    show_default=True,
    help="Write the deprecated topologyPolicies field.",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
    help="Log verbosity (logs go to stderr).",
)
def publish(
    *,
    node_name: str | None,
    podresources_socket: Path,
    sysfs_root: Path,
    kubelet_config: Path,
    kubeconfig: Path | None,
    delay_s: float,
    jitter_s: float,
    seed: int | None,
    poll_interval_s: float,
    health_bind_address: str,
    resync_interval_s: float,
    topology_policies: bool,
    log_level: str,
) -> None:
    """Publish the NodeResourceTopology of a node run by a real kubelet.

    A per-node daemon (run it as a DaemonSet, manifests/nrt-publisher/): every poll it
    reads the kubelet's podresources (GetAllocatableResources + List), the NUMA nodes from
    sysfs and the kubelet's configuration, and computes the node's NRT in the shape fake
    nodes publish (docs/nrt.md). Changes become visible --delay + U(0, --jitter) later,
    in order; the object is written only when what is visible changes. Unreadable inputs
    are logged and retried; the daemon keeps serving /healthz (and /readyz says why it is
    not ready).
    """
    import logging
    import sys

    from fakenrt.commands.kubeaccess import kube_client
    from fakenrt.nrtpub.daemon import BindError, PublisherOptions, serve

    if node_name is None:
        raise click.UsageError("--node is required (or set NODE_NAME)")
    logging.basicConfig(
        level=log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    kube = kube_client(
        kubeconfig, component="fakenrt-nrt-publisher", connect_timeout_s=10.0, read_timeout_s=10.0
    )
    options = PublisherOptions(
        node=node_name,
        podresources_socket=podresources_socket,
        sysfs_root=sysfs_root,
        kubelet_config=kubelet_config,
        delay_s=delay_s,
        jitter_s=jitter_s,
        seed=seed,
        poll_interval_s=poll_interval_s,
        health_bind_address=health_bind_address,
        topology_policies=topology_policies,
        resync_interval_s=resync_interval_s,
    )
    try:
        serve(options, kube)
    except BindError as exc:
        raise click.UsageError(f"--health-bind-address {health_bind_address}: {exc}") from None
