"""The exporter's pod calls on the shared client (``exporter.kubeclient``): list and watch
the pods bound to this node, read one pod, merge-patch one pod. Raw JSON dicts; errors
are ``exporter.kubeerrors`` classes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from exporter.kubeclient import MERGE_PATCH, METADATA_JSON, KubeClient, path

WATCH_TIMEOUT_S = 60
PODS = path("api", "v1", "pods")


class PodApi:
    """Pod reads, watches and patches of one node's pods."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    def list_node_pods(self, node_name: str) -> tuple[str, list[dict[str, Any]]]:
        """Every pod bound to the node: (list resourceVersion, pod objects)."""
        items, version = self._client.list_all(
            PODS, what=f"list pods of node {node_name}", fieldSelector=f"spec.nodeName={node_name}"
        )
        return version, items

    def prefetch_node_pods(self, node_name: str) -> Callable[[], tuple[str, list[dict[str, Any]]]]:
        """Start listing the node's pods in a thread now; the returned call waits for the
        answer (or raises the list's error). Start-up sends the list before importing the
        rest of the daemon, so the API server answers while the modules load."""
        done = threading.Event()
        outcome: list[Any] = []

        def fetch() -> None:
            try:
                outcome.append(self.list_node_pods(node_name))
            except BaseException as exc:  # handed to the caller, who decides
                outcome.append(exc)
            finally:
                done.set()

        threading.Thread(target=fetch, name="pod-list", daemon=True).start()

        def result() -> tuple[str, list[dict[str, Any]]]:
            done.wait()
            if isinstance(outcome[0], BaseException):
                raise outcome[0]
            return outcome[0]  # type: ignore[no-any-return]

        return result

    def watch_node_pods(
        self,
        node_name: str,
        resource_version: str,
        *,
        timeout_s: int = WATCH_TIMEOUT_S,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Watch events (type, object) for the node's pods from ``resource_version``.

        Ends when the server closes the watch (after ``timeout_s``) or when the stream
        ``on_open`` receives is shut down. Raises Gone when the version is too old,
        Transient when the connection fails.
        """
        for event in self._client.watch(
            PODS,
            resource_version=resource_version,
            timeout_s=timeout_s,
            what=f"watch pods of node {node_name}",
            on_open=on_open,
            fieldSelector=f"spec.nodeName={node_name}",
        ):
            yield str(event.get("type") or ""), event.get("object") or {}

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return self._client.get(
            path("api", "v1", "namespaces", namespace, "pods", name),
            what=f"get pod {namespace}/{name}",
        )

    def merge_patch_pod(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Apply a JSON merge patch to the pod; the updated object's metadata (a
        ``PartialObjectMetadata``: half the bytes of the pod to read and decode, and the
        only part a patch of annotations changes)."""
        return self._client.patch(
            path("api", "v1", "namespaces", namespace, "pods", name),
            patch,
            content_type=MERGE_PATCH,
            what=f"patch pod {namespace}/{name}",
            accept=METADATA_JSON,
        )
