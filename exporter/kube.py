"""The exporter's edge to the Kubernetes API: pod reads, watches and patches of one node,
over a small urllib3 client (see ``exporter.kubeconfig`` for why not the kubernetes
package).

API errors are mapped by HTTP status to the exporter's own exceptions: callers catch the
narrow one (404 = the pod is gone, 409 = re-read, 410 = list again, 429/5xx/timeouts/
connection failures = back off and retry, anything else = rejected).
"""

from __future__ import annotations

import json
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import urllib3

from exporter import __version__
from exporter.kubeconfig import ClusterConfig

DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_READ_TIMEOUT_S = 10.0
WATCH_TIMEOUT_S = 60
TOKEN_REREAD_S = 60.0
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
    """Any other refusal (401/403 RBAC or admission, 422 invalid): retrying will not help."""


class Gone(KubeError):
    """410: a watch's resourceVersion is too old; list again."""


def error_for_status(status: int, what: str, body: bytes) -> KubeError:
    """The exporter's exception for an HTTP error answer. Pure."""
    message = body[:300].decode(errors="replace")
    try:
        parsed = json.loads(body)
        if isinstance(parsed, dict) and parsed.get("message"):
            message = str(parsed["message"])
    except ValueError:
        pass
    text = f"{what}: HTTP {status}: {message}"
    if status == 404:
        return NotFound(text, status)
    if status == 409:
        return Conflict(text, status)
    if status == 410:
        return Gone(text, status)
    if status == 429 or status >= 500:
        return Retryable(text, status)
    return Rejected(text, status)


def _ssl_context(config: ClusterConfig) -> ssl.SSLContext:
    if config.insecure_skip_tls_verify:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context = ssl.create_default_context(
            cafile=str(config.ca_file) if config.ca_file else None, cadata=config.ca_data
        )
    if config.client_cert_file and config.client_key_file:
        context.load_cert_chain(str(config.client_cert_file), str(config.client_key_file))
    return context


class KubeClient:
    """JSON requests to one API server with a bearer token or client certificate."""

    def __init__(
        self,
        config: ClusterConfig,
        *,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.connect_timeout_s = connect_timeout_s
        self.read_timeout_s = read_timeout_s
        self._clock = clock
        self._token: str | None = config.token
        self._token_read_at = float("-inf")
        self._lock = threading.Lock()
        self._pool = urllib3.PoolManager(
            num_pools=2,
            maxsize=4,
            retries=False,
            ssl_context=_ssl_context(config) if config.server.startswith("https") else None,
        )

    def _authorization(self) -> dict[str, str]:
        if self.config.token_file is not None:
            with self._lock:
                if self._clock() - self._token_read_at >= TOKEN_REREAD_S:
                    try:
                        self._token = self.config.token_file.read_text().strip()
                        self._token_read_at = self._clock()
                    except OSError as exc:
                        raise Retryable(
                            f"cannot read token {self.config.token_file}: {exc}"
                        ) from exc
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def request(
        self,
        method: str,
        path: str,
        *,
        what: str,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        read_timeout_s: float | None = None,
        stream: bool = False,
    ) -> Any:
        """Send a request; returns the parsed JSON body, or the raw response if ``stream``."""
        url = self.config.server + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = {
            "Accept": "application/json",
            "User-Agent": f"numa-exporter/{__version__}",
            **self._authorization(),
        }
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        timeout = urllib3.Timeout(
            connect=self.connect_timeout_s, read=read_timeout_s or self.read_timeout_s
        )
        try:
            response = self._pool.request(
                method, url, body=payload, headers=headers, timeout=timeout,
                preload_content=not stream, redirect=False,
            )  # fmt: skip
        except urllib3.exceptions.HTTPError as exc:
            raise Retryable(f"{what}: {type(exc).__name__}: {exc}") from exc
        if response.status >= 400:
            data = response.data if not stream else response.read()
            if stream:
                response.release_conn()
            raise error_for_status(response.status, what, data)
        if stream:
            return response
        try:
            return json.loads(response.data)
        except ValueError as exc:
            raise Retryable(f"{what}: the answer is not JSON") from exc


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

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    @staticmethod
    def _pod_path(namespace: str, name: str) -> str:
        return (
            f"/api/v1/namespaces/{urllib.parse.quote(namespace, safe='')}"
            f"/pods/{urllib.parse.quote(name, safe='')}"
        )

    def list_node_pods(self, node_name: str) -> tuple[str, list[dict[str, Any]]]:
        """Every pod bound to the node: (list resourceVersion, pod objects)."""
        data = self._client.request(
            "GET",
            "/api/v1/pods",
            what=f"list pods of node {node_name}",
            query={"fieldSelector": f"spec.nodeName={node_name}"},
        )
        return str(data["metadata"].get("resourceVersion", "")), list(data.get("items") or [])

    def watch_node_pods(
        self, node_name: str, resource_version: str, *, timeout_s: int = WATCH_TIMEOUT_S
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Watch events (type, object) for the node's pods from ``resource_version``.

        Ends when the server closes the watch (after ``timeout_s``). Raises Gone when the
        version is too old, Retryable when the connection fails.
        """
        what = f"watch pods of node {node_name}"
        response = self._client.request(
            "GET",
            "/api/v1/pods",
            what=what,
            query={
                "fieldSelector": f"spec.nodeName={node_name}",
                "resourceVersion": resource_version,
                "allowWatchBookmarks": "true",
                "watch": "true",
                "timeoutSeconds": str(timeout_s),
            },
            read_timeout_s=timeout_s + 30,
            stream=True,
        )
        try:
            for line in _iter_lines(response):
                try:
                    event = json.loads(line)
                except ValueError as exc:
                    raise Retryable(f"{what}: garbled event") from exc
                kind, obj = event.get("type", ""), event.get("object") or {}
                if kind == "ERROR":
                    code = int(obj.get("code") or 0)
                    message = f"{what}: {obj.get('message', '')}"
                    if code == 410:
                        raise Gone(message, 410)
                    raise Retryable(message, code or None)
                yield str(kind), obj
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Retryable(f"{what}: {type(exc).__name__}: {exc}") from exc
        finally:
            response.release_conn()

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return dict(
            self._client.request(
                "GET", self._pod_path(namespace, name), what=f"get pod {namespace}/{name}"
            )
        )

    def merge_patch_pod(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Apply a JSON merge patch to the pod; the updated object."""
        return dict(
            self._client.request(
                "PATCH",
                self._pod_path(namespace, name),
                what=f"patch pod {namespace}/{name}",
                body=dict(patch),
                content_type=MERGE_PATCH,
            )
        )
