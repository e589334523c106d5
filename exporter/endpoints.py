"""``/metrics``, ``/healthz`` (and ``/livez``) and ``/readyz`` over HTTP.

Served as prometheus-client documents it: its WSGI app (``make_wsgi_app``: the text
format, OpenMetrics on request, gzip, ``name[]`` filters) run by the standard library's
WSGI server (``wsgiref``) with prometheus-client's threading server class. The port is
reachable from the pod network, so the only additions are bounds and routing:

* at most ``MAX_CONNECTIONS`` connections are served at once (more are closed at once),
  and a connection that sends nothing for ``IDLE_TIMEOUT_S`` is closed (the request line
  and headers are bounded by the standard library: 64 KiB a line, 100 headers);
* one request per connection (``wsgiref`` answers HTTP/1.0 and closes); request bodies
  are never read;
* ``GET`` and ``HEAD`` of the four paths (the query string is only read by ``/metrics``);
  other methods get 405, other paths 404;
* the library's request log is silent, and a connection that fails (a peer that goes
  away, a timeout) is logged at debug, not as a traceback on stderr.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import socketserver
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from exporter.health import Health

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 16
IDLE_TIMEOUT_S = 10.0

StartResponse = Callable[..., Any]
Environ = dict[str, Any]
WsgiApp = Callable[[Environ, StartResponse], Iterable[bytes]]


def _split_bind_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"bind address {address!r} is not host:port or :port")
    return host.strip("[]"), int(port)


def parse_bind_address(address: str) -> tuple[str, int]:
    """``host:port``, ``[v6]:port`` or ``:port`` (all IPv4 interfaces, ``0.0.0.0``) ->
    (host, port); ValueError otherwise."""
    host, port = _split_bind_address(address)
    return host or "0.0.0.0", port


def _answer(
    start_response: StartResponse,
    status: str,
    body: bytes,
    *,
    head: bool,
    headers: tuple[tuple[str, str], ...] = (),
) -> list[bytes]:
    start_response(
        status,
        [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body))),
         *headers],
    )  # fmt: skip
    return [b"" if head else body]


def make_app(registry: CollectorRegistry, health: Health) -> WsgiApp:
    """The WSGI app of the four endpoints (``health``'s decisions as 200 or 503 with a
    one-line reason)."""
    metrics = make_wsgi_app(registry)
    probes = {
        "/healthz": health.liveness,
        "/livez": health.liveness,
        "/readyz": health.readiness,
    }

    def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        head = method == "HEAD"
        if path != "/metrics" and path not in probes:
            return _answer(start_response, "404 Not Found", b"not found\n", head=head)
        if method not in ("GET", "HEAD"):
            return _answer(
                start_response, "405 Method Not Allowed", b"only GET and HEAD\n",
                head=False, headers=(("Allow", "GET, HEAD"),),
            )  # fmt: skip
        if path == "/metrics":
            if not head:
                return metrics(environ, start_response)  # type: ignore[no-any-return]
            # the library answers GET only: a HEAD gets the GET's headers, no body
            answer: list[Any] = []
            body = b"".join(
                metrics({**environ, "REQUEST_METHOD": "GET"}, lambda *a: answer.extend(a[:2]))
            )
            status, headers = answer
            start_response(status, [*headers, ("Content-Length", str(len(body)))])
            return [b""]
        try:
            ok, reason = probes[path]()
        except Exception:  # a bug: logged as the daemon logs (JSON), answered, served on
            log.exception("probe failed", extra={"path": path})
            return _answer(start_response, "500 Internal Server Error", b"error\n", head=head)
        status = "200 OK" if ok else "503 Service Unavailable"
        return _answer(start_response, status, f"{reason}\n".encode(), head=head)

    return app


class _Handler(WSGIRequestHandler):
    timeout = IDLE_TIMEOUT_S  # per receive: a silent connection is dropped

    def log_message(self, format: str, *args: Any) -> None:
        """The access log stays off (probes every few seconds)."""


class _Server(ThreadingWSGIServer):
    """prometheus-client's thread-per-connection WSGI server, with a bound on the
    connections served at once, dual-stack on "every interface", and failed
    connections logged at debug."""

    daemon_threads = True
    dual_stack = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)  # read at each start
        super().__init__(*args, **kwargs)

    def server_bind(self) -> None:
        """``WSGIServer.server_bind`` without the reverse DNS lookup of the address that
        ``HTTPServer.server_bind`` makes (``socket.getfqdn``) for the CGI variable
        ``SERVER_NAME``, which nothing here reads: no DNS query at start-up."""
        if self.dual_stack:
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "numa-exporter", self.server_address[1]
        self.setup_environ()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)  # too many open connections: refuse this one
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("metrics connection failed", exc_info=True)


def _server_class(host: str) -> type[_Server]:
    """The server for ``host`` (``""``: every interface, dual-stack where the node has
    IPv6: on an IPv6-only cluster the kubelet probes the pod's IPv6 address)."""
    dual_stack = not host and socket.has_dualstack_ipv6()
    ipv6 = ":" in host or dual_stack
    return type(
        "Server",
        (_Server,),
        {"address_family": socket.AF_INET6 if ipv6 else socket.AF_INET, "dual_stack": dual_stack},
    )


class HttpServer:
    """Serves the endpoints on one address, in daemon threads. The address is bound at
    construction (a bad one fails at start-up); ``start()`` serves."""

    def __init__(self, address: str, registry: CollectorRegistry, health: Health) -> None:
        host, port = _split_bind_address(address)  # ":port": every interface, v4 and v6
        server_class = _server_class(host)
        bind_host = host or ("::" if server_class.address_family == socket.AF_INET6 else "")
        self._server = make_server(
            bind_host, port, make_app(registry, health), server_class, _Handler
        )
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        # no periodic wake-up while idle: stop() wakes the loop itself
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(None,), name="http", daemon=True
        )
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop accepting and close the listening socket (connections being served end
        with their answer)."""
        if self._thread is not None:
            # shutdown() asks the loop to end and waits for it; shutting the listening
            # socket down wakes the loop from its wait for connections
            stopper = threading.Thread(target=self._server.shutdown, daemon=True)
            stopper.start()
            with contextlib.suppress(OSError):
                self._server.socket.shutdown(socket.SHUT_RDWR)
            stopper.join(timeout_s)
            self._thread.join(timeout_s)
        self._server.server_close()
