"""Liveness and readiness, and the HTTP server for /metrics, /healthz and /readyz.

``Health`` is fed by the reconcile loop: after every pass it records whether the kubelet
podresources API and the API server were reached. ``/readyz`` answers 200 only if both
were reached within the last ``window`` passes; ``/healthz`` answers 200 while the loop
keeps completing passes (a wedged loop fails the liveness probe).
"""

from __future__ import annotations

import collections
import socket
import threading
from collections.abc import Callable

from exporter import httpserver
from exporter.promtext import CONTENT_TYPE, Registry


class Health:
    def __init__(
        self,
        *,
        clock: Callable[[], float],
        window: int = 3,
        stall_after_s: float = 120.0,
    ) -> None:
        self._clock = clock
        self._passes: collections.deque[tuple[bool, bool]] = collections.deque(maxlen=window)
        self._lock = threading.Lock()
        self._started = clock()
        self._last_pass: float | None = None
        self.stall_after_s = stall_after_s
        #: set by the first pass that reached both the kubelet and the API server
        self.reached = threading.Event()

    def record_pass(self, *, podresources_ok: bool, api_ok: bool) -> None:
        with self._lock:
            self._passes.append((podresources_ok, api_ok))
            self._last_pass = self._clock()
        if podresources_ok and api_ok:
            self.reached.set()

    def readiness(self) -> tuple[bool, str]:
        """(ready, a one-line reason)."""
        with self._lock:
            passes = list(self._passes)
        if not passes:
            return False, "no reconcile pass yet"
        podresources = any(p for p, _ in passes)
        api = any(a for _, a in passes)
        if podresources and api:
            return True, "ok"
        missing = [
            name
            for name, ok in (("kubelet podresources", podresources), ("API server", api))
            if not ok
        ]
        return False, f"not reached in the last {len(passes)} passes: {', '.join(missing)}"

    def liveness(self) -> tuple[bool, str]:
        with self._lock:
            last = self._last_pass if self._last_pass is not None else self._started
        idle = self._clock() - last
        if idle > self.stall_after_s:
            return False, f"no reconcile pass completed for {idle:.0f}s"
        return True, "ok"


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


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host`` (``""``: every interface, dual-stack where the node
    has IPv6: on an IPv6-only cluster the kubelet probes the pod's IPv6 address)."""
    all_interfaces = not host
    dual_stack = all_interfaces and socket.has_dualstack_ipv6()
    family = socket.AF_INET6 if ":" in host or dual_stack else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if dual_stack:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind((host, port))
        sock.listen(16)
    except BaseException:
        sock.close()
        raise
    return sock


class HttpServer:
    """Serves /metrics, /healthz (and /livez) and /readyz on one address, in daemon
    threads (``exporter.httpserver``). The address is bound at construction (a bad one
    fails at start-up); ``start()`` serves."""

    def __init__(self, address: str, registry: Registry, health: Health) -> None:
        host, port = _split_bind_address(address)  # ":port": every interface, v4 and v6
        self._socket = _listen(host, port)
        self._registry = registry
        self._health = health
        self._server: httpserver.HttpServer | None = None

    @property
    def port(self) -> int:
        return int(self._socket.getsockname()[1])

    def _metrics(self) -> httpserver.Answer:
        return 200, self._registry.expose(), CONTENT_TYPE

    def _probe(self, check: Callable[[], tuple[bool, str]]) -> httpserver.Answer:
        ok, reason = check()
        return (200 if ok else 503), f"{reason}\n".encode(), "text/plain"

    def start(self) -> None:
        live = lambda: self._probe(self._health.liveness)  # noqa: E731
        self._server = httpserver.HttpServer(
            self._socket,
            {
                "/metrics": self._metrics,
                "/healthz": live,
                "/livez": live,
                "/readyz": lambda: self._probe(self._health.readiness),
            },
        )
        self._server.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
        else:
            self._socket.close()
