"""``numa-exporter observe``: one reconcile's worth of derivation, printed, nothing written.

For a person debugging a node: reads podresources and sysfs (and, with an API client,
the pods' specs to judge Memory Manager completeness as the daemon does) and returns
``{"namespace/name": {annotation: value}}`` for the pods the exporter would annotate,
by the daemon's rules (``PodView.writable``, pods listed twice left out, a kubelet
without ``GetAllocatableResources`` has no Memory Manager view). Without an API client
every pod the kubelet lists once is included and memory groups are judged from the
reported blocks alone, as complete.
"""

from __future__ import annotations

from pathlib import Path

from exporter.kube_pods import PodApi
from exporter.kubeerrors import NotFound
from exporter.placement import annotation_values, derive_placement
from exporter.podresources_client import PodResourcesClient, PodResourcesUnimplemented
from exporter.pods import PodView, pod_view
from exporter.resources import PodResources, duplicate_keys
from exporter.sysfs import read_cpu_numa_map


def _reports(client: PodResourcesClient, pod: str | None) -> tuple[PodResources, ...]:
    if pod is None:
        return client.list()
    namespace, _, name = pod.partition("/")
    try:
        return (client.get(namespace, name),)
    except PodResourcesUnimplemented:
        # Get is beta since 1.34 behind KubeletPodResourcesGet; List has every pod.
        return tuple(r for r in client.list() if r.key == pod)


def observe(
    *,
    socket_path: Path,
    sysfs_root: Path,
    pod_api: PodApi | None = None,
    node_name: str | None = None,
    pod: str | None = None,
    timeout_s: float = 10.0,
) -> dict[str, dict[str, str]]:
    cpu_map = read_cpu_numa_map(sysfs_root)
    client = PodResourcesClient(socket_path, timeout_s=timeout_s)
    try:
        reports = _reports(client, pod)
        static = client.allocatable_or_empty().memory_manager_static if pod_api else False
    finally:
        client.close()

    views: dict[str, PodView] = {}
    if pod_api is not None:
        if node_name:
            _, items = pod_api.list_node_pods(node_name)
            views = {v.key: v for v in (pod_view(o) for o in items)}
        else:
            for r in reports:
                try:
                    views[r.key] = pod_view(pod_api.get_pod(r.namespace, r.name))
                except NotFound:
                    continue

    duplicates = duplicate_keys(reports)
    out: dict[str, dict[str, str]] = {}
    for r in sorted(reports, key=lambda x: x.key):
        if r.key in duplicates:
            continue
        expected: frozenset[str] | None = None
        if pod_api is not None:
            view = views.get(r.key)
            if view is None or not view.writable:
                continue
            expected = view.expected_memory_containers(memory_manager_static=static)
        values = annotation_values(
            derive_placement(r, cpu_map, expected_memory_containers=expected)
        )
        out[r.key] = {name: value for name, value in values.items() if value is not None}
    return out
