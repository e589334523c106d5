"""``fakenrt controller``: fake NUMA nodes on a real API server (thin: validate, run)."""

from __future__ import annotations

import logging
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from fakenrt.commands.kubeaccess import kube_client
from fakenrt.commands.params import (
    DAY,
    DURATION,
    DURATION_HELP,
    BindAddress,
    Directory,
    Duration,
    Name,
)
from fakenrt.controller.settings import DEFAULT_CONTROLLER_NAME, ControllerSettings

if TYPE_CHECKING:
    from fakenrt.controller.runner import Controller

WEEK = 7 * DAY
#: The controller's API deadline (connect and read) and connection pool size.
API_TIMEOUT_S = 30.0
API_POOL_SIZE = 32


@click.command("controller")
@click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    envvar="KUBECONFIG",
    help="Kubeconfig of the cluster (default: $KUBECONFIG, in-cluster config, ~/.kube/config).",
)
@click.option(
    "--profile",
    "profile_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Node profiles YAML (docs/profiles.md): the fake nodes this controller owns.",
)
@click.option(
    "--state-dir",
    type=Directory(),
    help="Per node <state-dir>/<node>/kubelet.sock (podresources gRPC) and "
    "<state-dir>/<node>/sys (sysfs tree) for numa-exporter. Omit to serve neither.",
)
@click.option(
    "--controller-name",
    type=Name("label-value"),
    default=DEFAULT_CONTROLLER_NAME,
    show_default=True,
    help="Value of the fakenrt.io/controller label marking the nodes this controller owns; "
    "nodes without it are never touched.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed for NRT jitter and every other random choice (reproducible runs).",
)
@click.option(
    "--nrt-delay",
    type=DURATION,
    default=0.0,
    show_default=True,
    help="Delay before an allocation or release shows in the node's NRT "
    "'available' (0: publish immediately, jitter ignored). " + DURATION_HELP,
)
@click.option(
    "--nrt-jitter",
    type=DURATION,
    default=0.0,
    show_default=True,
    help="Extra random delay, uniform in [0, jitter], per change and node.",
)
@click.option(
    "--nrt-fingerprint-terminated-pods/--no-nrt-fingerprint-terminated-pods",
    default=False,
    show_default=True,
    help="The NRT pod fingerprint also covers Succeeded/Failed pods still on the node, as "
    "with a kubelet before 1.32 (default: the current kubelet, which leaves them out). "
    "A profile's nrt.fingerprintTerminatedPods overrides it per node.",
)
@click.option(
    "--nrt-topology-policies/--no-nrt-topology-policies",
    default=True,
    show_default=True,
    help="Write the deprecated NRT topologyPolicies field. A profile's "
    "nrt.topologyPolicies overrides it per node.",
)
@click.option(
    "--nrt-volcano/--no-nrt-volcano",
    default=False,
    show_default=True,
    help="Also publish per node Volcano's Numatopology (nodeinfo.volcano.sh/v1alpha1) as "
    "its resource-exporter writes it, from the same state and lag as the NRT (its CRD must "
    "be installed). A profile's nrt.volcano overrides it per node.",
)
@click.option(
    "--nrt-koordlet/--no-nrt-koordlet",
    default=False,
    show_default=True,
    help="Write the NRT as Koordinator's koordlet does (v1alpha1, its annotations and "
    "zones) instead of the topology exporter's v1alpha2. A profile's nrt.koordlet "
    "overrides it per node.",
)
@click.option(
    "--nrt-refresh",
    type=DURATION,
    default=60.0,
    show_default=True,
    help="Re-publish every NRT this often even without changes (repairs edits "
    "by others; 0: never).",
)
@click.option(
    "--start-delay",
    type=DURATION,
    default=0.0,
    show_default=True,
    help="Time from admission (status Pending, ContainerCreating) to Running.",
)
@click.option(
    "--default-run-duration",
    type=Duration(maximum=WEEK),
    default=None,
    help="How long a pod runs before it Succeeds and releases its resources, when it "
    "has no fakenrt.io/run-duration annotation (default: until deleted).",
)
@click.option(
    "--taint/--no-taint",
    default=True,
    show_default=True,
    help="Taint the nodes fakenrt.io/fake-node=true:NoSchedule so only pods that "
    "tolerate it land there.",
)
@click.option(
    "--lease-duration",
    type=click.IntRange(min=1, max=3600),
    default=40,
    show_default=True,
    help="leaseDurationSeconds of the node Leases in kube-node-lease.",
)
@click.option(
    "--lease-renew-interval",
    type=Duration(positive=True, maximum=3600),
    default=10.0,
    show_default=True,
    help="How often each node's Lease is renewed.",
)
@click.option(
    "--node-status-interval",
    type=Duration(positive=True),
    default=60.0,
    show_default=True,
    help="How often each node's status (conditions) is written again.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1, max=64),
    default=8,
    show_default=True,
    help="Threads writing to the API server (shared by all nodes).",
)
@click.option(
    "--remove-nodes",
    is_flag=True,
    help="Delete every node owned by --controller-name (with its Lease and NRT) and "
    "exit; needs no --profile.",
)
@click.option(
    "--remove-on-exit",
    is_flag=True,
    help="On SIGTERM / SIGINT, delete the nodes this controller owns before exiting.",
)
@click.option(
    "--metrics-bind-address",
    type=BindAddress(optional=True),
    default="",
    help="host:port (or :port) serving Prometheus /metrics: nodes, admissions by result, "
    "pods by stage, NRT changes pending, API writes by effect and result. "
    "Default: no metrics server.",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
    help="Log verbosity (logs go to stderr).",
)
def controller(**options: Any) -> None:
    """Run fake NUMA nodes on a real API server.

    Creates the Node objects named in --profile (labelled fakenrt.io/fake-node=true and
    fakenrt.io/controller=<name>) with Lease heartbeats; admits pods bound to them with the
    simulated kubelet Topology Manager, in bind order (Running, or Failed with the kubelet's
    reason, e.g. TopologyAffinityError); publishes one NodeResourceTopology per node with
    the configured lag; and, with --state-dir, serves a podresources socket and a sysfs tree
    per node for numa-exporter. See docs/controller.md.
    """
    logging.basicConfig(
        level=options["log_level"].upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from fakenrt.controller.registration import remove_nodes

    kube = kube_client(
        options["kubeconfig"],
        component="fakenrt-controller",
        connect_timeout_s=API_TIMEOUT_S,
        read_timeout_s=API_TIMEOUT_S,
        pool_size=API_POOL_SIZE,
    )
    if options["remove_nodes"]:
        from exporter.kubeerrors import ApiError

        try:
            removed = remove_nodes(kube, controller=options["controller_name"])
        except ApiError as exc:
            raise click.ClickException(f"cannot remove nodes: {exc}") from exc
        click.echo(f"removed {len(removed)} node(s): {', '.join(removed) or '-'}")
        return
    if options["profile_path"] is None:
        raise click.UsageError("--profile is required (unless --remove-nodes)")
    run(kube, **options)


def _serve(ctl: Controller, metrics_address: str) -> None:
    """Start the controller (and its metrics server) and run it until a signal."""
    from exporter.kubeerrors import ApiError
    from fakenrt.podresources_server import PodResourcesServerError

    if metrics_address:
        from prometheus_client import CollectorRegistry

        from fakenrt.controller.metrics import ControllerCollector, serve_metrics

        registry = CollectorRegistry()
        registry.register(ControllerCollector(ctl.snapshot))
        try:
            serve_metrics(metrics_address, registry)
        except (ValueError, OSError) as exc:
            raise click.UsageError(f"--metrics-bind-address: {exc}") from exc
    try:
        try:
            ctl.start()
        except (ApiError, PodResourcesServerError, OSError, ValueError) as exc:
            raise click.ClickException(f"cannot start the controller: {exc}") from exc
        if ctl.foreign:
            click.echo(
                f"fakenrt controller: not serving {len(ctl.foreign)} profile node(s) whose "
                f"Node exists without this controller's labels: {', '.join(ctl.foreign)}",
                err=True,
            )
        ctl.run()
    finally:
        ctl.stop()


def run(kube: Any, **options: Any) -> None:
    from fakenrt.controller.registration import remove_nodes
    from fakenrt.controller.runner import Controller, RunOptions
    from fakenrt.dra.slices import DeviceClassConflict, device_classes
    from fakenrt.profiles import ProfileError, load_profiles

    try:
        profiles = load_profiles(options["profile_path"])
        device_classes(profiles)  # the drivers' classes must agree across nodes
    except ProfileError as exc:
        raise click.ClickException(str(exc)) from exc
    except DeviceClassConflict as exc:
        raise click.ClickException(f"{options['profile_path']}: {exc}") from exc
    try:
        settings = ControllerSettings(
            controller=options["controller_name"],
            taint=options["taint"],
            seed=options["seed"],
            start_delay=options["start_delay"],
            nrt_delay=options["nrt_delay"],
            nrt_jitter=options["nrt_jitter"],
            nrt_refresh=options["nrt_refresh"],
            nrt_fingerprint_terminated_pods=options["nrt_fingerprint_terminated_pods"],
            nrt_topology_policies=options["nrt_topology_policies"],
            nrt_volcano=options["nrt_volcano"],
            nrt_koordlet=options["nrt_koordlet"],
            default_run_duration=options["default_run_duration"],
            lease_duration=options["lease_duration"],
            lease_renew_interval=options["lease_renew_interval"],
            node_status_interval=options["node_status_interval"],
        )
    except ValueError as exc:  # options that disagree (e.g. a renew interval past the lease)
        raise click.UsageError(str(exc)) from exc
    ctl = Controller(
        kube,
        profiles,
        settings,
        RunOptions(state_dir=options["state_dir"], workers=options["workers"]),
        clock=time.time,
    )

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        ctl.stop_event.set()
        ctl.wake()

    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        _serve(ctl, options["metrics_bind_address"])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if options["remove_on_exit"]:
        removed = remove_nodes(kube, controller=settings.controller)
        click.echo(f"removed {len(removed)} node(s)", err=True)
