"""The exporter's edge to the Kubernetes API: pod reads, watches and patches of one node.

API errors are mapped by HTTP status to the exporter's own exceptions, raised ``from``
the client's: callers catch the narrow one (404 = the pod is gone, 409 = re-read,
429/5xx/timeouts/connection failures = back off and retry, anything else = rejected).
Objects are read as raw JSON and reduced to :class:`exporter.pods.PodView` values at
once, so neither the client's generated models nor full pod objects are kept around.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client, config

DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_READ_TIMEOUT_S = 30.0
WATCH_TIMEOUT_S = 60
MERGE_PATCH = "application/merge-patch+json"


class KubeError(RuntimeError):
    """A Kubernetes API call failed; ``status`` is the HTTP status (None: no answer)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class NotFound(KubeError):
    """404: the object is gone."""


class Conflict(KubeError):
    """409: the object changed since it was read (resourceVersion precondition)."""


class Retryable(KubeError):
    """429, 5xx, a timeout or no connection: retry later with backoff."""


class Rejected(KubeError):
    """Any other refusal (403 RBAC/admission, 422 invalid): retrying will not help."""


class Gone(KubeError):
    """410: a watch's resourceVersion is too old; list again."""


def _status_message(body: str | None) -> str:
    if not body:
        return ""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:300]
    return str(data.get("message", "")) if isinstance(data, dict) else body[:300]


def map_error(exc: BaseException, what: str) -> KubeError:
    """The exporter's exception for a client exception raised while doing ``what``."""
    if isinstance(exc, client.ApiException):
        status = int(exc.status) if exc.status else None
        message = f"{what}: HTTP {status} {exc.reason}: {_status_message(exc.body)}"
        if status == 404:
            return NotFound(message, status)
        if status == 409:
            return Conflict(message, status)
        if status == 410:
            return Gone(message, status)
        if status is None or status == 429 or status >= 500:
            return Retryable(message, status)
        return Rejected(message, status)
    return Retryable(f"{what}: {type(exc).__name__}: {exc}", None)


_CLIENT_ERRORS: tuple[type[BaseException], ...] = (
    client.ApiException,
    urllib3.exceptions.HTTPError,
    OSError,
    ValueError,  # a truncated or garbled body
)


def load_api_client(kubeconfig: Path | None) -> client.ApiClient:
    """An ApiClient from a kubeconfig file, or the in-cluster ServiceAccount when None.

    urllib3's own retries are off: the exporter backs off itself, with jitter.
    """
    configuration = client.Configuration()
    if kubeconfig is None:
        config.load_incluster_config(client_configuration=configuration)
    else:
        config.load_kube_config(
            config_file=str(kubeconfig), client_configuration=configuration, persist_config=False
        )
    configuration.retries = False
    return client.ApiClient(configuration)


def _iter_lines(response: Any) -> Iterator[bytes]:
    pending = b""
    for chunk in response.stream(amt=None, decode_content=True):
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line.strip():
                yield line
    if pending.strip():
        yield pending


class PodApi:
    """Pod reads, watches and patches, as raw JSON dicts."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
    ) -> None:
        self._core = client.CoreV1Api(api_client)
        self._timeout = (connect_timeout_s, read_timeout_s)
        self._connect_timeout_s = connect_timeout_s

    def list_node_pods(self, node_name: str) -> tuple[str, list[dict[str, Any]]]:
        """Every pod bound to the node: (list resourceVersion, pod objects)."""
        what = f"list pods of node {node_name}"
        try:
            response = self._core.list_pod_for_all_namespaces(
                field_selector=f"spec.nodeName={node_name}",
                _preload_content=False,
                _request_timeout=self._timeout,
            )
            data = json.loads(response.data)
        except _CLIENT_ERRORS as exc:
            raise map_error(exc, what) from exc
        return str(data["metadata"].get("resourceVersion", "")), list(data.get("items") or [])

    def watch_node_pods(
        self, node_name: str, resource_version: str, *, timeout_s: int = WATCH_TIMEOUT_S
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Watch events (type, object) for the node's pods from ``resource_version``.

        Ends when the server closes the watch (after ``timeout_s``). Raises Gone when the
        version is too old, Retryable when the connection fails.
        """
        what = f"watch pods of node {node_name}"
        try:
            response = self._core.list_pod_for_all_namespaces(
                field_selector=f"spec.nodeName={node_name}",
                resource_version=resource_version,
                allow_watch_bookmarks=True,
                watch=True,
                timeout_seconds=timeout_s,
                _preload_content=False,
                _request_timeout=(self._connect_timeout_s, timeout_s + 30),
            )
        except _CLIENT_ERRORS as exc:
            raise map_error(exc, what) from exc
        try:
            for line in _iter_lines(response):
                event = json.loads(line)
                kind, obj = event.get("type", ""), event.get("object") or {}
                if kind == "ERROR":
                    code = int(obj.get("code") or 0)
                    message = f"{what}: {obj.get('message', '')}"
                    if code == 410:
                        raise Gone(message, 410)
                    raise Retryable(message, code or None)
                yield str(kind), obj
        except _CLIENT_ERRORS as exc:
            raise map_error(exc, what) from exc
        finally:
            response.release_conn()

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        what = f"get pod {namespace}/{name}"
        try:
            response = self._core.read_namespaced_pod(
                name, namespace, _preload_content=False, _request_timeout=self._timeout
            )
            return dict(json.loads(response.data))
        except _CLIENT_ERRORS as exc:
            raise map_error(exc, what) from exc

    def merge_patch_pod(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Apply a JSON merge patch to the pod; the updated object."""
        what = f"patch pod {namespace}/{name}"
        try:
            response = self._core.patch_namespaced_pod(
                name,
                namespace,
                dict(patch),
                _content_type=MERGE_PATCH,
                _preload_content=False,
                _request_timeout=self._timeout,
            )
            return dict(json.loads(response.data))
        except _CLIENT_ERRORS as exc:
            raise map_error(exc, what) from exc
