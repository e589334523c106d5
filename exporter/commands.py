"""The ``run`` and ``observe`` commands: validate options, then call one function."""

from __future__ import annotations

import json
import ssl
import sys
from pathlib import Path

import click

from exporter import __version__, logs
from exporter.health import parse_bind_address
from exporter.kube_pods import PodApi
from exporter.kubeclient import KubeClient
from exporter.kubeconfig import KubeconfigError, from_kubeconfig, in_cluster
from exporter.kubeerrors import ApiError
from exporter.podresources_client import DEFAULT_SOCKET, DEFAULT_TIMEOUT_S, PodResourcesError
from exporter.sysfs import SysfsError

_SOCKET_HELP = "The kubelet podresources unix socket."
_SYSFS_HELP = "Root of sysfs; CPU -> NUMA comes from <root>/devices/system/node/node*/cpulist."


def _kube_client(kubeconfig: Path | None) -> KubeClient:
    try:
        config = in_cluster() if kubeconfig is None else from_kubeconfig(kubeconfig)
        return KubeClient(config, user_agent=f"numa-exporter/{__version__}")
    except KubeconfigError as exc:
        raise click.ClickException(str(exc)) from exc
    except (OSError, ssl.SSLError) as exc:
        raise click.ClickException(f"cannot load the API server's TLS settings: {exc}") from exc


@click.command("run")
@click.option(
    "--node-name",
    envvar="NODE_NAME",
    required=True,
    help="This node's name (env NODE_NAME, from the downward API spec.nodeName).",
)
@click.option(
    "--podresources-socket",
    envvar="PODRESOURCES_SOCKET",
    type=click.Path(path_type=Path),
    default=DEFAULT_SOCKET,
    show_default=True,
    help=f"{_SOCKET_HELP} (env PODRESOURCES_SOCKET)",
)
@click.option(
    "--sysfs-root",
    envvar="SYSFS_ROOT",
    type=click.Path(path_type=Path),
    default=Path("/sys"),
    show_default=True,
    help=f"{_SYSFS_HELP} (env SYSFS_ROOT)",
)
@click.option(
    "--poll-interval",
    envvar="POLL_INTERVAL",
    type=click.FloatRange(min=0.05),
    default=1.0,
    show_default=True,
    help="Seconds between reconcile passes; pod events also trigger one (env POLL_INTERVAL).",
)
@click.option(
    "--metrics-bind-address",
    envvar="METRICS_BIND_ADDRESS",
    default=":8080",
    show_default=True,
    help="host:port (or :port) serving /metrics, /healthz and /readyz (env METRICS_BIND_ADDRESS).",
)
@click.option(
    "--kubeconfig",
    envvar="KUBECONFIG",
    type=click.Path(path_type=Path, exists=True),
    default=None,
    help="kubeconfig file; without it the in-cluster ServiceAccount is used (env KUBECONFIG).",
)
@click.option(
    "--rpc-timeout",
    envvar="PODRESOURCES_TIMEOUT",
    type=click.FloatRange(min=0.01),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="Deadline in seconds of every podresources call (env PODRESOURCES_TIMEOUT).",
)
@click.option(
    "--log-level",
    envvar="LOG_LEVEL",
    default="info",
    show_default=True,
    type=click.Choice(["debug", "info", "warning", "error"]),
    help="Minimum level of the JSON log lines on stderr (env LOG_LEVEL).",
)
def run_command(
    *,
    node_name: str,
    podresources_socket: Path,
    sysfs_root: Path,
    poll_interval: float,
    metrics_bind_address: str,
    kubeconfig: Path | None,
    rpc_timeout: float,
    log_level: str,
) -> None:
    """Run the exporter daemon for one node until SIGTERM."""
    try:
        parse_bind_address(metrics_bind_address)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--metrics-bind-address") from exc
    logs.configure(log_level)
    kube = _kube_client(kubeconfig)
    # the node's pod list goes out now: the API server answers while the daemon's
    # modules load (the first annotation waits for both)
    first_pod_list = PodApi(kube).prefetch_node_pods(node_name)
    from exporter.daemon import Options, run

    options = Options(
        node_name=node_name,
        podresources_socket=podresources_socket,
        sysfs_root=sysfs_root,
        poll_interval_s=poll_interval,
        metrics_bind_address=metrics_bind_address,
        rpc_timeout_s=rpc_timeout,
    )
    try:
        run(options, kube, first_pod_list=first_pod_list)
    except SysfsError as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot serve on {metrics_bind_address}: {exc}") from exc


@click.command("observe")
@click.option(
    "--podresources-socket",
    type=click.Path(path_type=Path),
    default=DEFAULT_SOCKET,
    show_default=True,
    help=_SOCKET_HELP,
)
@click.option(
    "--sysfs-root",
    type=click.Path(path_type=Path),
    default=Path("/sys"),
    show_default=True,
    help=_SYSFS_HELP,
)
@click.option(
    "--kubeconfig",
    type=click.Path(path_type=Path, exists=True),
    default=None,
    help="Read the pods from this cluster to judge Memory Manager completeness as "
    "the daemon does; without it no API server is needed.",
)
@click.option(
    "--node-name",
    default=None,
    help="With --kubeconfig: list this node's pods in one call instead of one GET per pod.",
)
@click.option(
    "--pod",
    default=None,
    metavar="NAMESPACE/NAME",
    help="Only this pod (podresources Get, or List where Get is not served).",
)
@click.option(
    "--rpc-timeout",
    type=click.FloatRange(min=0.01),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="Deadline in seconds of every podresources call.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print one JSON object {"namespace/name": {annotation: value}} on stdout '
    "(the only output format).",
)
def observe_command(
    *,
    podresources_socket: Path,
    sysfs_root: Path,
    kubeconfig: Path | None,
    node_name: str | None,
    pod: str | None,
    rpc_timeout: float,
    as_json: bool,
) -> None:
    """Print the annotations the exporter would write on this node, once; writes nothing."""
    from exporter.kube_pods import PodApi
    from exporter.observe import observe

    if pod is not None and "/" not in pod:
        raise click.BadParameter("expected NAMESPACE/NAME", param_hint="--pod")
    pod_api = PodApi(_kube_client(kubeconfig)) if kubeconfig is not None else None
    try:
        result = observe(
            socket_path=podresources_socket,
            sysfs_root=sysfs_root,
            pod_api=pod_api,
            node_name=node_name,
            pod=pod,
            timeout_s=rpc_timeout,
        )
    except (SysfsError, PodResourcesError, ApiError) as exc:
        raise click.ClickException(str(exc)) from exc
    json.dump(result, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
