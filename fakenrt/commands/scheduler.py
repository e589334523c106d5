"""``fakenrt scheduler``: the reference NUMA scheduler plugin, once (``evaluate``) or as a
scheduler for a cluster (``run``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from exporter.kubeerrors import ApiError
from exporter.quantities import QuantityError
from fakenrt.commands.kubeaccess import kube_client
from fakenrt.commands.params import Name, Number
from fakenrt.commands.podfiles import InputError, read_manifests, validated_pod
from fakenrt.podspec import PodSpecError
from fakenrt.profiles.loading import load_yaml_documents
from fakenrt.scheduler.args import ArgsError, PluginArgs, parse_args
from fakenrt.scheduler.nrt import NRTError
from fakenrt.scheduler.oneshot import evaluate_on_node
from fakenrt.scheduler.reconstruction import ReconstructionError
from fakenrt.scheduler.selector import SelectorError, check_selector
from fakenrt.textfiles import TextFileError, read_text
from fakenrt.yamltext import YamlError


def _load_documents(path: Path) -> list[Any]:
    """The YAML documents of a file: at most 8 MiB of UTF-8 text, duplicate keys refused."""
    try:
        text = read_text(path)
    except TextFileError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        return load_yaml_documents(text)
    except YamlError as exc:
        raise click.ClickException(f"{path}: {exc}") from None


def _load_one(path: Path, what: str) -> Mapping[str, Any]:
    docs = _load_documents(path)
    if len(docs) != 1 or not isinstance(docs[0], Mapping):
        raise click.ClickException(f"{path}: expected exactly one {what} mapping")
    return docs[0]


def _pods_on_node(path: Path) -> list[tuple[str, Mapping[str, Any]]]:
    """The pods of ``--pods-on-node``, each validated as the API server would."""
    try:
        manifests = read_manifests(str(path))
        for label, manifest in manifests:
            validated_pod(manifest, source=label)
    except InputError as exc:
        raise click.ClickException(str(exc)) from None
    return manifests


def _pod(path: Path) -> Mapping[str, Any]:
    """The one pod of ``--pod``, validated as the API server would."""
    try:
        manifests = read_manifests(str(path))
        if len(manifests) != 1:
            raise InputError(f"{path}: expected exactly one Pod, found {len(manifests)}")
        label, manifest = manifests[0]
        validated_pod(manifest, source=label)
    except InputError as exc:
        raise click.ClickException(str(exc)) from None
    if not isinstance(manifest, Mapping):  # validated_pod accepts mappings only
        raise click.ClickException(f"{path}: a Pod manifest must be a mapping")
    return manifest


def _plugin_args(path: Path | None) -> PluginArgs:
    """The plugin arguments of ``--args``: the defaults without the option or for an empty
    file, else its one YAML mapping."""
    if path is None:
        return PluginArgs()
    docs = _load_documents(path)
    if len(docs) > 1:
        raise click.ClickException(f"{path}: expected one YAML mapping, found {len(docs)}")
    try:
        return parse_args(docs[0] if docs else None, source=str(path))
    except ArgsError as exc:
        raise click.ClickException(str(exc)) from None


_ARGS_OPTION = click.option(
    "--args",
    "args_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Plugin arguments (YAML mapping): ignoreList, reconstructAvailable, scoringStrategy, "
    "preferClosestNUMANodes.",
)


@click.group("scheduler")
def scheduler() -> None:
    """The reference NUMA-aware scheduler: the plugin and a scheduler loop."""


@scheduler.command("evaluate")
@click.option(
    "--nrt",
    "nrt_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The node's NodeResourceTopology object (YAML).",
)
@click.option(
    "--pod",
    "pod_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The Pod manifest to place (YAML).",
)
@click.option(
    "--pods-on-node",
    "pods_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Multi-document YAML of the Pods already on the node, with their placement "
    "annotations (used to reconstruct free capacity; terminal pods count for nothing). "
    "Without it the pods are unknown and NRT available is trusted.",
)
@_ARGS_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def evaluate(
    nrt_path: Path,
    pod_path: Path,
    pods_path: Path | None,
    args_path: Path | None,
    as_json: bool,
) -> None:
    """Would the kubelet admit POD on the node NRT describes? Print the verdict, the zones
    the reservation would charge and every score.

    Exit status 0 whether or not the pod fits; non-zero for invalid input.
    """
    nrt_obj = _load_one(nrt_path, "NodeResourceTopology")
    pod_obj = _pod(pod_path)
    pods = _pods_on_node(pods_path) if pods_path is not None else None
    args = _plugin_args(args_path)
    try:
        result = evaluate_on_node(
            nrt_obj,
            pod_obj,
            pods,
            args,
            nrt_source=str(nrt_path),
            pod_source=str(pod_path),
        )
    except (NRTError, PodSpecError, QuantityError) as exc:
        raise click.ClickException(str(exc)) from None
    except ReconstructionError as exc:
        raise click.ClickException(f"{pods_path}: {exc}") from None
    if as_json:
        click.echo(json.dumps(result.as_json()))
        return
    verdict = "fits" if result.fit else "does not fit"
    click.echo(f"{verdict}: {result.reason}" if result.reason else verdict)
    click.echo(f"zones: {', '.join(result.zones) if result.zones else '-'}")
    for name, value in result.scores.values.items():
        click.echo(f"score {name}: {value}")
    if result.nrt_exact:
        click.echo(
            "note: the NRT pod fingerprint matches the pods on the node: NRT available is used",
            err=True,
        )
    else:
        for key in result.unplaced:
            click.echo(f"note: pod {key} has no placement annotation; not counted", err=True)
    if pods and not args.reconstruct_available:
        click.echo("note: --pods-on-node is not used with reconstructAvailable: false", err=True)


def _selector(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        try:
            check_selector(value)
        except SelectorError as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
    return value


@scheduler.command("run")
@click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    envvar="KUBECONFIG",
    help="Kubeconfig of the cluster to schedule in (default: $KUBECONFIG, in-cluster "
    "config, ~/.kube/config).",
)
@click.option(
    "--scheduler-name",
    type=Name(),
    default="numa-reference",
    show_default=True,
    help="Schedule pods whose spec.schedulerName is this.",
)
@_ARGS_OPTION
@click.option(
    "--node-selector",
    callback=_selector,
    default=None,
    help="Only consider nodes matching this label selector (e.g. pool=gpu).",
)
@click.option(
    "--period",
    type=Number(minimum=0.05, maximum=3600),
    default=1.0,
    show_default=True,
    help="Seconds between scheduling cycles (a pod change starts one sooner).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(min=0, max=65535),
    default=None,
    help="Serve Prometheus metrics on this port (0 picks a free one); default: off.",
)
@click.option("--once", is_flag=True, help="Run a single scheduling cycle and exit.")
@click.option("-v", "--verbose", is_flag=True, help="Log every bind and retry.")
def run(
    *,
    kubeconfig: Path | None,
    scheduler_name: str,
    args_path: Path | None,
    node_selector: str | None,
    period: float,
    metrics_port: int | None,
    once: bool,
    verbose: bool,
) -> None:
    """Schedule pending pods with the NUMA plugin: filter every node (whole-node resources,
    then NUMA alignment from its NRT), score, write the predicted placement and bind."""
    import logging
    import signal
    import threading
    import time

    from prometheus_client import CollectorRegistry, start_http_server

    from fakenrt.scheduler.kube import KubeCluster, watch_pods
    from fakenrt.scheduler.loop import Scheduler
    from fakenrt.scheduler.metrics import SchedulerMetrics
    from fakenrt.scheduler.plugin import NumaPlugin

    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    args = _plugin_args(args_path)
    kube = kube_client(kubeconfig, component="fakenrt-scheduler")
    registry = CollectorRegistry()
    metrics = SchedulerMetrics(registry)
    if metrics_port is not None:
        server, _ = start_http_server(metrics_port, registry=registry)
        click.echo(f"metrics on :{server.server_port}/metrics", err=True)
    cluster = KubeCluster(kube, scheduler_name=scheduler_name, node_selector=node_selector)
    sched = Scheduler(
        cluster=cluster,
        plugin=NumaPlugin(args),
        scheduler_name=scheduler_name,
        metrics=metrics,
        clock=time.monotonic,
    )
    if once:
        try:
            report = sched.run_cycle()
        except ApiError as exc:
            raise click.ClickException(
                f"scheduling cycle failed against {kube.config.server}: {exc}"
            ) from None
        for key, node in report.bound.items():
            click.echo(f"bound {key} -> {node}")
        for key, why in report.unschedulable.items():
            click.echo(f"unschedulable {key}: {why}")
        return
    stop = threading.Event()
    wake = threading.Event()

    def _stop(*_: object) -> None:
        stop.set()
        wake.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    threading.Thread(
        target=watch_pods, args=(kube, scheduler_name, wake, stop), daemon=True
    ).start()
    sched.run(stop, period=period, wake=wake)
