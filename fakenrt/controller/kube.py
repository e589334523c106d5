"""A thin JSON client for the few Kubernetes calls the controller makes.

Edge module. It reuses the ``kubernetes`` package's configuration, authentication and
connection pool (``ApiClient``) but sends and receives plain dicts: the generated model
classes cost more CPU than the rest of the controller combined at 500 nodes. API errors
are mapped by HTTP status to this module's exceptions (raised ``from`` the cause), so
callers catch the narrow one: :class:`NotFound` (the object is gone), :class:`Conflict`
(re-read), :class:`Gone` (relist), :class:`Transient` (retry with backoff).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import urllib3
from kubernetes import client as k8s

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


class ApiError(RuntimeError):
    """An API call failed; ``status`` is the HTTP status (0: no response)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status = status


class NotFound(ApiError):
    pass


class Conflict(ApiError):
    pass


class Invalid(ApiError):
    """422: the request failed validation (e.g. a uid precondition in a patch)."""


class Gone(ApiError):
    """410: the watch's resourceVersion is too old; list again."""


class Transient(ApiError):
    """429, 5xx, timeouts and connection errors: worth retrying after a backoff."""


def _error(status: int, body: bytes) -> ApiError:
    try:
        message = str(json.loads(body).get("message") or "")
    except (ValueError, AttributeError):
        message = body[:200].decode(errors="replace")
    if status == 404:
        return NotFound(status, message)
    if status == 409:
        return Conflict(status, message)
    if status == 410:
        return Gone(status, message)
    if status == 422:
        return Invalid(status, message)
    if status == 429 or status >= 500:
        return Transient(status, message)
    return ApiError(status, message)


def path(*parts: str) -> str:
    return "/" + "/".join(quote(p, safe="") for p in parts)


class KubeClient:
    """JSON requests through a configured ``kubernetes.client.ApiClient``."""

    def __init__(self, api_client: k8s.ApiClient, *, timeout: float = 30.0) -> None:
        self._api = api_client
        self._timeout = timeout

    @property
    def api_client(self) -> k8s.ApiClient:
        return self._api

    def _send(
        self,
        method: str,
        url_path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = JSON,
        timeout: float | tuple[float, float] | None = None,
    ) -> Any:
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        request = self._api.param_serialize(
            method=method,
            resource_path=url_path,
            query_params=list(query) or None,
            header_params=headers,
            auth_settings=["BearerToken"],
        )
        method_, url, header_params, _, _ = request
        try:
            return self._api.call_api(
                method_,
                url,
                header_params=header_params,
                body=body,  # serialized by the REST client (JSON)
                _request_timeout=timeout if timeout is not None else self._timeout,
            )
        except k8s.ApiException as exc:
            raise Transient(exc.status or 0, str(exc.reason)) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Transient(0, f"{method} {url_path}: {exc}") from exc

    def request(
        self,
        method: str,
        url_path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = JSON,
    ) -> dict[str, Any]:
        """One call; returns the decoded JSON object or raises an :class:`ApiError`."""
        response = self._send(method, url_path, query=query, body=body, content_type=content_type)
        try:
            data = response.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Transient(0, f"{method} {url_path}: {exc}") from exc
        finally:
            response.response.release_conn()
        if not 200 <= response.status < 300:
            raise _error(response.status, data)
        decoded = json.loads(data) if data else {}
        return decoded if isinstance(decoded, dict) else {}

    def get(self, url_path: str, **query: str) -> dict[str, Any]:
        return self.request("GET", url_path, query=tuple(query.items()))

    def create(self, url_path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return self.request("POST", url_path, body=body)

    def replace(self, url_path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return self.request("PUT", url_path, body=body)

    def patch(
        self, url_path: str, body: Mapping[str, Any], *, content_type: str = MERGE_PATCH
    ) -> dict[str, Any]:
        return self.request("PATCH", url_path, body=body, content_type=content_type)

    def delete(self, url_path: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self.request("DELETE", url_path, body=body)

    def list_all(self, url_path: str, **query: str) -> tuple[list[dict[str, Any]], str]:
        """Every item of a collection (paged), and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        params = dict(query, limit="500")
        while True:
            page = self.get(url_path, **params)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                return items, str(meta.get("resourceVersion") or "")
            params["continue"] = token

    def watch(
        self,
        url_path: str,
        *,
        resource_version: str,
        timeout_s: int,
        on_open: Callable[[Any], None] | None = None,
        **query: str,
    ) -> Iterator[dict[str, Any]]:
        """Stream watch events (``{"type", "object"}``) from ``resource_version`` until the
        server ends the watch; bookmarks included. Raises Gone on an expired version.
        ``on_open`` receives the open HTTP response (closing it ends the stream)."""
        params = [
            *query.items(),
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(timeout_s)),
        ]
        response = self._send(
            "GET", url_path, query=params, timeout=(self._timeout, timeout_s + self._timeout)
        )
        raw = response.response
        if on_open is not None:
            on_open(raw)
        try:
            if not 200 <= response.status < 300:
                raise _error(response.status, raw.data)
            buffer = b""
            for chunk in raw.stream(64 * 1024, decode_content=True):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if event.get("type") == "ERROR":
                        status = int((event.get("object") or {}).get("code") or 500)
                        raise _error(status, json.dumps(event.get("object")).encode())
                    yield event
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Transient(0, f"watch {url_path}: {exc}") from exc
        finally:
            raw.release_conn()
