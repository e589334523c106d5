"""The project's one Kubernetes API client: plain JSON dicts over HTTP/1.1
(``exporter.httpclient``, standard library only).

Every component that talks to the API server (numa-exporter, the fake-node controller,
the NUMA scheduler loop) uses this client. It deliberately does not import the
``kubernetes`` package: that import alone costs ~20 MiB of resident memory on every node
running the exporter, and its generated model classes cost more CPU than the rest of the
controller at 500 nodes. Configuration comes from ``exporter.kubeconfig`` (a kubeconfig
file or the in-cluster ServiceAccount).

Errors are mapped by HTTP status to ``exporter.kubeerrors`` (raised ``from`` the cause
for connection failures); garbled answers and watch ``ERROR`` events are mapped the same
way, so callers catch one hierarchy whatever the call.
"""

from __future__ import annotations

import json
import re
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from exporter import __version__
from exporter.httpclient import HttpClient, HttpError, Stream
from exporter.kubeconfig import ClusterConfig
from exporter.kubeerrors import ApiError, Transient, error_for_status

if TYPE_CHECKING:  # imported when an exec plugin is configured: start-up CPU
    from exporter.execcredential import ExecCredential, ExecPlugin

JSON = "application/json"
#: Only the object's metadata in the answer (a ``PartialObjectMetadata``): what client-go's
#: metadata client asks for; the API server honours it on reads, watches and writes.
METADATA_JSON = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"

DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_READ_TIMEOUT_S = 10.0
TOKEN_REREAD_S = 60.0
#: An exec plugin's token is renewed this long before it expires.
EXEC_REFRESH_MARGIN_S = 60.0
LIST_PAGE = 500
_PLAIN = re.compile(r"[A-Za-z0-9._~-]*")

Query = Mapping[str, str] | Sequence[tuple[str, str]]


def _quote(part: str) -> str:
    # names of API objects need no quoting (DNS labels and subdomains): skip the work
    return part if _PLAIN.fullmatch(part) else urllib.parse.quote(part, safe="")


def path(*parts: str) -> str:
    """An API path from segments, each percent-quoted: ``path("api", "v1", "pods")``."""
    return "/" + "/".join(_quote(p) for p in parts)


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
    """JSON requests to one API server with a bearer token and/or a client certificate.

    Thread-safe: one connection pool of ``pool_size`` connections is shared by all
    callers. A ``tokenFile`` (the projected ServiceAccount token) is re-read every minute
    so rotation is picked up. Raises ``ssl.SSLError``/``OSError`` at construction when
    the TLS files cannot be loaded.
    """

    def __init__(
        self,
        config: ClusterConfig,
        *,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
        pool_size: int = 4,
        user_agent: str = f"numa-testkit/{__version__}",
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        run_exec: Callable[[ExecPlugin], ExecCredential] | None = None,
    ) -> None:
        self.config = config
        self.connect_timeout_s = connect_timeout_s
        self.read_timeout_s = read_timeout_s
        self._user_agent = user_agent
        self._clock = clock
        self._token: str | None = config.token
        self._token_read_at = float("-inf")
        self._token_refresh_at = float("-inf")
        self._wall_clock = wall_clock
        self._run_exec = run_exec
        self._lock = threading.Lock()
        self._http = HttpClient(
            config.server,
            ssl_context=_ssl_context(config) if config.server.startswith("https") else None,
            pool_size=pool_size,
        )

    def close(self) -> None:
        """Close the pooled connections."""
        self._http.close()

    def _authorization(self) -> dict[str, str]:
        if self.config.exec_plugin is not None:
            self._exec_token()
        elif self.config.token_file is not None:
            with self._lock:
                if self._clock() - self._token_read_at >= TOKEN_REREAD_S:
                    try:
                        self._token = self.config.token_file.read_text().strip()
                        self._token_read_at = self._clock()
                    except OSError as exc:
                        raise Transient(
                            0, f"cannot read token {self.config.token_file}: {exc}"
                        ) from exc
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def _exec_token(self) -> None:
        """Run the kubeconfig's exec plugin when there is no token yet, or it expires within
        EXEC_REFRESH_MARGIN_S, or the API server refused it (401)."""
        from exporter.execcredential import ExecCredentialError, run_exec_plugin

        plugin = self.config.exec_plugin
        assert plugin is not None
        with self._lock:
            if self._token is not None and self._clock() < self._token_refresh_at:
                return
            try:
                credential = (self._run_exec or run_exec_plugin)(plugin)
            except ExecCredentialError as exc:
                raise Transient(0, str(exc)) from exc
            self._token = credential.token
            if credential.expires_at is None:
                self._token_refresh_at = float("inf")
            else:
                left = credential.expires_at - self._wall_clock() - EXEC_REFRESH_MARGIN_S
                self._token_refresh_at = self._clock() + max(0.0, left)

    def _send(
        self,
        method: str,
        url_path: str,
        *,
        what: str,
        query: Query,
        body: Any,
        content_type: str,
        read_timeout_s: float | None,
        stream: bool,
        accept: str = JSON,
    ) -> Any:
        target = url_path
        pairs = list(query.items()) if isinstance(query, Mapping) else list(query)
        if pairs:
            target += "?" + urllib.parse.urlencode(pairs)
        headers = {"Accept": accept, "User-Agent": self._user_agent, **self._authorization()}
        payload = b""
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        timeouts = {
            "connect_timeout_s": self.connect_timeout_s,
            "read_timeout_s": read_timeout_s or self.read_timeout_s,
        }
        try:
            if stream:
                response: Any = self._http.stream(method, target, headers=headers, **timeouts)
            else:
                response = self._http.request(
                    method, target, headers=headers, body=payload, **timeouts
                )
        except (HttpError, OSError) as exc:
            raise Transient(0, f"{what}: {type(exc).__name__}: {exc}") from exc
        if response.status >= 400:
            try:
                data = response.read() if stream else response.data
            except (HttpError, OSError):
                data = b""
            if response.status == 401 and self.config.exec_plugin is not None:
                with self._lock:  # the token was refused: run the plugin on the next call
                    self._token_refresh_at = float("-inf")
            raise error_for_status(response.status, what, data)
        return response

    def request(
        self,
        method: str,
        url_path: str,
        *,
        what: str | None = None,
        query: Query = (),
        body: Any = None,
        content_type: str = JSON,
        read_timeout_s: float | None = None,
        accept: str = JSON,
    ) -> dict[str, Any]:
        """One call; the decoded JSON object (``{}`` for an empty answer). ``what`` names
        the call in error messages (default ``"<METHOD> <path>"``); ``accept``
        :data:`METADATA_JSON` asks for the object's metadata only."""
        what = what or f"{method} {url_path}"
        response = self._send(
            method, url_path, what=what, query=query, body=body, content_type=content_type,
            read_timeout_s=read_timeout_s, stream=False, accept=accept,
        )  # fmt: skip
        if not response.data:
            return {}
        try:
            decoded = json.loads(response.data)
        except ValueError as exc:
            raise Transient(response.status, f"{what}: the answer is not JSON") from exc
        return decoded if isinstance(decoded, dict) else {}

    def get(self, url_path: str, *, what: str | None = None, **query: str) -> dict[str, Any]:
        return self.request("GET", url_path, what=what, query=query)

    def create(
        self, url_path: str, body: Mapping[str, Any], *, what: str | None = None
    ) -> dict[str, Any]:
        return self.request("POST", url_path, what=what, body=dict(body))

    def replace(
        self, url_path: str, body: Mapping[str, Any], *, what: str | None = None
    ) -> dict[str, Any]:
        return self.request("PUT", url_path, what=what, body=dict(body))

    def patch(
        self,
        url_path: str,
        body: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        content_type: str = MERGE_PATCH,
        what: str | None = None,
        accept: str = JSON,
    ) -> dict[str, Any]:
        """A merge (default), strategic-merge (:data:`STRATEGIC_MERGE_PATCH`) or JSON
        (:data:`JSON_PATCH`, ``body`` is then a list of operations) patch."""
        payload = dict(body) if isinstance(body, Mapping) else [dict(op) for op in body]
        return self.request(
            "PATCH", url_path, what=what, body=payload, content_type=content_type, accept=accept
        )

    def delete(
        self, url_path: str, body: Mapping[str, Any] | None = None, *, what: str | None = None
    ) -> dict[str, Any]:
        return self.request(
            "DELETE", url_path, what=what, body=dict(body) if body is not None else None
        )

    def list_all(
        self, url_path: str, *, what: str | None = None, **query: str
    ) -> tuple[list[dict[str, Any]], str]:
        """Every item of a collection (paged), and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        params = dict(query, limit=str(LIST_PAGE))
        while True:
            page = self.get(url_path, what=what, **params)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                return items, str(meta.get("resourceVersion") or "")
            params["continue"] = str(token)

    def watch(
        self,
        url_path: str,
        *,
        resource_version: str = "",
        timeout_s: int,
        what: str | None = None,
        on_open: Callable[[Any], None] | None = None,
        **query: str,
    ) -> Iterator[dict[str, Any]]:
        """Stream watch events (``{"type", "object"}``, bookmarks included) from
        ``resource_version`` (empty: the current state as ``ADDED`` events first) until
        the server ends the watch after ``timeout_s``. An ``ERROR`` event raises the
        class of its code (410 -> :class:`~exporter.kubeerrors.Gone`); a broken stream
        raises :class:`~exporter.kubeerrors.Transient`. ``on_open`` receives the open
        :class:`~exporter.httpclient.Stream`: ``shutdown()`` on it ends the stream from
        another thread."""
        what = what or f"watch {url_path}"
        params = [
            *query.items(),
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_s)),
        ]
        if resource_version:
            params.append(("resourceVersion", resource_version))
        response = self._send(
            "GET", url_path, what=what, query=params, body=None, content_type=JSON,
            read_timeout_s=timeout_s + self.read_timeout_s, stream=True,
        )  # fmt: skip
        assert isinstance(response, Stream)
        if on_open is not None:
            on_open(response)
        try:
            for line in response.lines():
                try:
                    event = json.loads(line)
                except ValueError as exc:
                    raise Transient(0, f"{what}: garbled event") from exc
                if not isinstance(event, dict):
                    raise Transient(0, f"{what}: garbled event")
                if event.get("type") == "ERROR":
                    raise watch_error(event, what)
                yield event
        except (HttpError, OSError) as exc:
            raise Transient(0, f"{what}: {type(exc).__name__}: {exc}") from exc
        finally:
            response.close()


def watch_error(event: Mapping[str, Any], what: str) -> ApiError:
    """The exception for a watch ``ERROR`` event: the class of its Status ``code`` (410 ->
    Gone); a Status without a usable code counts as a server error (Transient). Pure."""
    obj = event.get("object")
    status = obj if isinstance(obj, dict) else {}
    code = status.get("code")
    if isinstance(code, bool) or not isinstance(code, int) or not 100 <= code <= 599:
        code = 500
    return error_for_status(code, what, json.dumps(status).encode())
