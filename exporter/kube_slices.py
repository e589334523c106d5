"""The exporter's ResourceSlice calls on the shared client (``exporter.kubeclient``): list
and watch the slices of this node (field selector ``spec.nodeName``). Raw JSON dicts;
errors are ``exporter.kubeerrors`` classes (404: resource.k8s.io/v1 not served)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from exporter.kubeclient import KubeClient, path

WATCH_TIMEOUT_S = 300
SLICES = path("apis", "resource.k8s.io", "v1", "resourceslices")


class SliceApi:
    """Reads and watches of one node's ResourceSlices."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    def list_node_slices(self, node_name: str) -> tuple[str, list[dict[str, Any]]]:
        items, version = self._client.list_all(
            SLICES,
            what=f"list ResourceSlices of node {node_name}",
            fieldSelector=f"spec.nodeName={node_name}",
        )
        return version, items

    def watch_node_slices(
        self,
        node_name: str,
        resource_version: str,
        *,
        timeout_s: int = WATCH_TIMEOUT_S,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        for event in self._client.watch(
            SLICES,
            resource_version=resource_version,
            timeout_s=timeout_s,
            what=f"watch ResourceSlices of node {node_name}",
            on_open=on_open,
            fieldSelector=f"spec.nodeName={node_name}",
        ):
            yield str(event.get("type") or ""), event.get("object") or {}
