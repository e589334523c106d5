"""The project's one Kubernetes API client: JSON dicts on API paths, over the official
``kubernetes`` library's REST layer (``kubernetes.client.rest.RESTClientObject``, what its
``ApiClient.call_api`` sends every call through: urllib3 connection pools, TLS, timeouts).

Every component that talks to the API server (numa-exporter, the fake-node controller,
the NUMA scheduler loop, NRT publishing, the harness) uses this module's
:class:`KubeClient`. It sends raw API paths with the headers it chooses through the
REST layer and decodes the answers itself, so objects stay plain dicts (the
library's generated models cost ~8x the CPU per watch event) and a patch can ask for the
object's metadata only (:data:`METADATA_JSON`). Configuration comes from
``exporter.kubesettings`` (kubeconfig or in-cluster, bounded), the bearer token from
``exporter.kubetoken`` (token files re-read, exec plugins renewed).

Errors are mapped by HTTP status to ``exporter.kubeerrors`` (raised ``from`` the cause
for connection failures); garbled answers and watch ``ERROR`` events are mapped the same
way, so callers catch one hierarchy whatever the call. Answers are bounded
(:data:`MAX_BODY`, and :data:`MAX_LINE` per watch event).
"""

from __future__ import annotations

import contextlib
import json
import re
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import urllib3
from kubernetes.client.configuration import Configuration
from kubernetes.client.exceptions import ApiException
from kubernetes.client.rest import RESTClientObject

from exporter import __version__
from exporter.kubeerrors import ApiError, Transient, error_for_status
from exporter.kubesettings import ClusterConfig
from exporter.kubetoken import BearerToken, CredentialError

JSON = "application/json"
#: Only the object's metadata in the answer (a ``PartialObjectMetadata``): what client-go's
#: metadata client asks for; the API server honours it on reads, watches and writes.
METADATA_JSON = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"

DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_READ_TIMEOUT_S = 10.0
LIST_PAGE = 500
#: The largest answer read into memory (a list page of 500 big pods is a few MiB).
MAX_BODY = 256 * 1024 * 1024
#: The largest watch event (one object; etcd stores at most 1.5 MiB per object).
MAX_LINE = 16 * 1024 * 1024
_PLAIN = re.compile(r"[A-Za-z0-9._~-]*")

Query = Mapping[str, str] | Sequence[tuple[str, str]]


def _quote(part: str) -> str:
    # names of API objects need no quoting (DNS labels and subdomains): skip the work
    return part if _PLAIN.fullmatch(part) else urllib.parse.quote(part, safe="")


def path(*parts: str) -> str:
    """An API path from segments, each percent-quoted: ``path("api", "v1", "pods")``."""
    return "/" + "/".join(_quote(p) for p in parts)


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _configuration(config: ClusterConfig, pool_size: int) -> Configuration:
    configuration = Configuration(host=config.server)
    configuration.ssl_ca_cert = str(config.ca_file) if config.ca_file else None
    configuration.ca_cert_data = config.ca_data
    configuration.verify_ssl = not config.insecure_skip_tls_verify
    configuration.cert_file = str(config.client_cert_file) if config.client_cert_file else None
    configuration.key_file = str(config.client_key_file) if config.client_key_file else None
    configuration.tls_server_name = config.tls_server_name
    configuration.proxy = config.proxy_url
    # callers retry with their own backoff; urllib3's immediate retries would multiply
    # the requests an unreachable or overloaded server gets
    configuration.retries = False
    configuration.connection_pool_maxsize = pool_size
    return configuration


def _read_body(raw: Any, what: str) -> bytes:
    """The whole answer of a urllib3 response, at most MAX_BODY bytes."""
    length = raw.headers.get("content-length")
    if length is not None and length.isdigit():
        if int(length) > MAX_BODY:
            raise Transient(0, f"{what}: the answer is larger than {MAX_BODY >> 20} MiB")
        return bytes(raw.read())
    parts, total = [], 0
    for chunk in raw.stream(65536):
        total += len(chunk)
        if total > MAX_BODY:
            raise Transient(0, f"{what}: the answer is larger than {MAX_BODY >> 20} MiB")
        parts.append(chunk)
    return b"".join(parts)


def _lines(raw: Any, what: str) -> Iterator[bytes]:
    """The non-empty lines of a streamed answer (one watch event each), bounded."""
    pending = b""
    for chunk in raw.stream(65536):
        pending += chunk
        if b"\n" not in chunk:
            if len(pending) > MAX_LINE:
                raise Transient(0, f"{what}: an event larger than {MAX_LINE >> 20} MiB")
            continue
        *complete, pending = pending.split(b"\n")
        yield from (line for line in complete if line.strip())
    if pending.strip():
        yield pending


class WatchStream:
    """An open watch; ``shutdown()`` ends it from another thread (a blocked read returns)."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def shutdown(self) -> None:
        with contextlib.suppress(Exception):  # already released or closed: nothing to end
            self._raw.shutdown()


class KubeClient:
    """JSON requests to one API server with a bearer token and/or a client certificate.

    Thread-safe: the library's connection pool (``pool_size`` connections kept) is
    shared by all callers; a watch holds one connection while it streams.
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
    ) -> None:
        self.config = config
        self.connect_timeout_s = connect_timeout_s
        self.read_timeout_s = read_timeout_s
        self._user_agent = user_agent
        self._token = BearerToken(config, clock=clock, wall_clock=wall_clock)
        if config.insecure_skip_tls_verify:  # chosen in the kubeconfig: not a warning per call
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        # the REST layer alone: the library's ApiClient adds model (de)serialization only,
        # and its import brings pydantic and every model package (docs/exporter.md)
        self._rest = RESTClientObject(_configuration(config, pool_size))
        self._server = config.server.rstrip("/")

    def close(self) -> None:
        """Close the pooled connections."""
        self._rest.close()

    def check_credentials(self) -> None:
        """Get the bearer token now (read its file, run the exec plugin): a command
        refuses an unusable credential at start, in one line, rather than on every
        request. Raises :class:`~exporter.kubetoken.CredentialError`."""
        self._token.current()

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
        accept: str,
    ) -> Any:
        """The urllib3 response of a successful call (its body not read yet)."""
        url = self._server + url_path
        pairs = list(query.items()) if isinstance(query, Mapping) else list(query)
        if pairs:
            url += "?" + urllib.parse.urlencode(pairs)
        headers = {"Accept": accept, "User-Agent": self._user_agent}
        try:
            token = self._token.current()
        except CredentialError as exc:
            raise Transient(0, f"{what}: {exc}") from exc
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if body is not None:
            headers["Content-Type"] = content_type
        timeout = (self.connect_timeout_s, read_timeout_s or self.read_timeout_s)
        try:
            raw = self._rest.request(
                method, url, headers=headers, body=body, _request_timeout=timeout
            ).response
        except (urllib3.exceptions.HTTPError, ApiException, OSError) as exc:
            detail = exc.reason if isinstance(exc, ApiException) else exc
            raise Transient(0, f"{what}: {type(exc).__name__}: {_one_line(detail)}") from exc
        if raw.status >= 400:
            try:
                data = _read_body(raw, what)  # a Status object: the connection is kept
                raw.release_conn()
            except (ApiError, urllib3.exceptions.HTTPError, OSError):
                data = b""
                raw.close()
            if raw.status == 401:
                self._token.refused()  # a rotated token or an expired exec credential
            raise error_for_status(raw.status, what, data)
        return raw

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
        raw = self._send(
            method, url_path, what=what, query=query, body=body, content_type=content_type,
            read_timeout_s=read_timeout_s, accept=accept,
        )  # fmt: skip
        try:
            data = _read_body(raw, what)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Transient(0, f"{what}: {type(exc).__name__}: {_one_line(exc)}") from exc
        finally:
            raw.release_conn()
        if not data:
            return {}
        try:
            decoded = json.loads(data)
        except ValueError as exc:
            raise Transient(raw.status, f"{what}: the answer is not JSON") from exc
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
        on_open: Callable[[WatchStream], None] | None = None,
        **query: str,
    ) -> Iterator[dict[str, Any]]:
        """Stream watch events (``{"type", "object"}``, bookmarks included) from
        ``resource_version`` (empty: the current state as ``ADDED`` events first) until
        the server ends the watch after ``timeout_s``. An ``ERROR`` event raises the
        class of its code (410 -> :class:`~exporter.kubeerrors.Gone`); a broken stream
        raises :class:`~exporter.kubeerrors.Transient`. ``on_open`` receives the open
        :class:`WatchStream`: ``shutdown()`` on it ends the stream from another thread."""
        what = what or f"watch {url_path}"
        params = [
            *query.items(),
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_s)),
        ]
        if resource_version:
            params.append(("resourceVersion", resource_version))
        raw = self._send(
            "GET", url_path, what=what, query=params, body=None, content_type=JSON,
            read_timeout_s=timeout_s + self.read_timeout_s, accept=JSON,
        )  # fmt: skip
        if on_open is not None:
            on_open(WatchStream(raw))
        try:
            for line in _lines(raw, what):
                try:
                    event = json.loads(line)
                except ValueError as exc:
                    raise Transient(0, f"{what}: garbled event") from exc
                if not isinstance(event, dict):
                    raise Transient(0, f"{what}: garbled event")
                if event.get("type") == "ERROR":
                    raise watch_error(event, what)
                yield event
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Transient(0, f"{what}: {type(exc).__name__}: {_one_line(exc)}") from exc
        finally:
            raw.close()


def watch_error(event: Mapping[str, Any], what: str) -> ApiError:
    """The exception for a watch ``ERROR`` event: the class of its Status ``code`` (410 ->
    Gone); a Status without a usable code counts as a server error (Transient). Pure."""
    obj = event.get("object")
    status = obj if isinstance(obj, dict) else {}
    code = status.get("code")
    if isinstance(code, bool) or not isinstance(code, int) or not 100 <= code <= 599:
        code = 500
    return error_for_status(code, what, json.dumps(status).encode())
