"""The ``run`` and ``observe`` commands: given parsed options, call one function each."""

from __future__ import annotations

import json
import ssl
import sys
from pathlib import Path

from exporter import __version__, logs, stopsignals
from exporter.kube_pods import PodApi
from exporter.kubeclient import KubeClient
from exporter.kubeconfig import KubeconfigError, from_kubeconfig, in_cluster
from exporter.kubeerrors import ApiError
from exporter.podresources_client import PodResourcesError
from exporter.sysfs import SysfsError


class CommandError(Exception):
    """The command failed: ``Error: <message>`` on stderr, exit status 1."""


def _kube_client(kubeconfig: Path | None) -> KubeClient:
    try:
        config = in_cluster() if kubeconfig is None else from_kubeconfig(kubeconfig)
        return KubeClient(config, user_agent=f"numa-exporter/{__version__}")
    except KubeconfigError as exc:
        raise CommandError(str(exc)) from exc
    except (OSError, ssl.SSLError) as exc:
        raise CommandError(f"cannot load the API server's TLS settings: {exc}") from exc


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
    logs.configure(log_level)
    kube = _kube_client(kubeconfig)
    # from before the first thread starts: every thread inherits SIGTERM and SIGINT
    # blocked, and the daemon waits for them in this one (daemon.run)
    with stopsignals.blocked():
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
            raise CommandError(f"--sysfs-root (SYSFS_ROOT): {exc}") from exc
        except OSError as exc:
            raise CommandError(
                f"--metrics-bind-address (METRICS_BIND_ADDRESS) {metrics_bind_address}: "
                f"cannot listen: {exc.strerror or exc}"
            ) from exc


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
    from exporter.observe import observe

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
    except SysfsError as exc:
        raise CommandError(f"--sysfs-root: {exc}") from exc
    except (PodResourcesError, ApiError) as exc:
        raise CommandError(str(exc)) from exc
    json.dump(result, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
