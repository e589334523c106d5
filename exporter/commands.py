"""The ``run`` and ``observe`` commands: given parsed options, call one function each."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from exporter import __version__, logs, stopsignals
from exporter.kube_pods import PodApi
from exporter.kubeclient import KubeClient
from exporter.kubeerrors import ApiError
from exporter.kubesettings import KubeconfigError, from_kubeconfig, in_cluster
from exporter.kubetoken import CredentialError
from exporter.sysfs import SysfsError


class CommandError(Exception):
    """The command failed: ``Error: <message>`` on stderr, exit status 1."""


def connections(write_concurrency: int) -> int:
    """The API server connections the daemon keeps: one per write in flight, one for the
    lists and reads, one for the events and one for each watch (pods, ResourceSlices)
    while it streams."""
    return write_concurrency + 4


def _kube_client(
    kubeconfig: Path | None, *, check_credentials: bool = False, pool_size: int = 4
) -> KubeClient:
    """The API client; a kubeconfig or file it names that cannot be used (/dev/zero, huge,
    not UTF-8 or YAML, bad certificates) is a one-line CommandError. With
    ``check_credentials`` (a one-shot command) so is a token file or exec plugin that
    gives no token; the daemon instead logs it and retries (credentials may come later)."""
    try:
        config = in_cluster() if kubeconfig is None else from_kubeconfig(kubeconfig)
        kube = KubeClient(config, user_agent=f"numa-exporter/{__version__}", pool_size=pool_size)
        if check_credentials:
            kube.check_credentials()
        return kube
    except (KubeconfigError, CredentialError) as exc:
        raise CommandError(str(exc)) from exc


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
    write_concurrency: int,
) -> None:
    """Run the exporter daemon for one node until SIGTERM."""
    logs.configure(log_level)
    kube = _kube_client(kubeconfig, pool_size=connections(write_concurrency))
    # from before the first thread starts: every thread inherits SIGTERM and SIGINT
    # blocked, and the daemon waits for them in this one (daemon.run)
    with stopsignals.blocked():
        # the node's pod list goes out now: the API server answers while the daemon's
        # modules load (the first annotation waits for both); gRPC and the podresources
        # messages (~60 ms of CPU) are among them, so nothing above imports them
        first_pod_list = PodApi(kube).prefetch_node_pods(node_name)
        from exporter.daemon import Options, run

        options = Options(
            node_name=node_name,
            podresources_socket=podresources_socket,
            sysfs_root=sysfs_root,
            poll_interval_s=poll_interval,
            metrics_bind_address=metrics_bind_address,
            rpc_timeout_s=rpc_timeout,
            write_concurrency=write_concurrency,
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
    from exporter.podresources_client import PodResourcesError

    pod_api = (
        PodApi(_kube_client(kubeconfig, check_credentials=True)) if kubeconfig is not None else None
    )
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
