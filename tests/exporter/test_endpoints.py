"""``/metrics`` and the probes over real TCP sockets: prometheus-client's WSGI app on the
standard library's server, routed, bounded and quiet."""

from __future__ import annotations

import re
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from exporter import endpoints
from exporter.endpoints import HttpServer, parse_bind_address
from exporter.health import Health
from exporter.metrics import ExporterMetrics


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def health() -> Health:
    return Health(clock=FakeClock(), stall_after_s=60)


@pytest.fixture
def server(health: Health) -> Iterator[HttpServer]:
    registry = CollectorRegistry()
    ExporterMetrics(registry)
    srv = HttpServer("127.0.0.1:0", registry, health)
    srv.start()
    yield srv
    srv.stop()


def _get(port: int, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def _raw(port: int, request: bytes) -> bytes:
    """Send ``request`` and read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(request)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    return data


def _status(answer: bytes) -> int:
    if not answer.startswith(b"HTTP/"):  # the standard library answers an unreadable
        # request line as HTTP/0.9 would: the error page without a status line
        match = re.search(rb"Error code: (\d+)", answer)
        assert match, answer[:200]
        return int(match.group(1))
    return int(answer.split(b" ", 2)[1])


def test_metrics_are_the_exporters_and_the_process_collectors(server: HttpServer) -> None:
    status, headers, body = _get(server.port, "/metrics")
    assert status == 200
    assert headers["content-type"].startswith("text/plain; version=")
    names = {f.name for f in text_string_to_metric_families(body.decode())}
    assert {
        "numa_exporter_build_info",
        "numa_exporter_reconciles",
        "numa_exporter_reconcile_duration_seconds",
        "process_resident_memory_bytes",
        "process_cpu_seconds",
        "python_info",
        "python_gc_collections",
    } <= names


def test_probes_answer_the_health_decisions(server: HttpServer, health: Health) -> None:
    assert _get(server.port, "/healthz")[::2] == (200, b"ok\n")
    assert _get(server.port, "/livez")[::2] == (200, b"ok\n")
    assert _get(server.port, "/readyz")[::2] == (503, b"no reconcile pass yet\n")
    health.record_pass(podresources_ok=True, api_ok=True)
    assert _get(server.port, "/readyz")[::2] == (200, b"ok\n")
    assert isinstance(health._clock, FakeClock)
    health._clock.now += 61
    status, _, body = _get(server.port, "/healthz")
    assert (status, body) == (503, b"the reconcile loop made no progress for 61s (limit 60s)\n")


@pytest.mark.parametrize("path", ["/metrics", "/healthz", "/readyz"])
def test_head_answers_the_gets_headers_without_a_body(server: HttpServer, path: str) -> None:
    get_status, get_headers, get_body = _get(server.port, path)
    status, headers, body = _get(server.port, path, method="HEAD")
    assert (status, body) == (get_status, b"")
    assert headers["content-type"] == get_headers["content-type"]
    if path != "/metrics":  # the metrics' own length changes from one scrape to the next
        assert headers["content-length"] == str(len(get_body))
    else:
        assert int(headers["content-length"]) > 1000


@pytest.mark.parametrize(
    "method,path,expected",
    [
        pytest.param("GET", "/", 404, id="root"),
        pytest.param("GET", "/metricsx", 404, id="unknown-path"),
        pytest.param("POST", "/metrics", 405, id="post-metrics"),
        pytest.param("DELETE", "/healthz", 405, id="delete-probe"),
        pytest.param("OPTIONS", "/readyz", 405, id="options"),
        pytest.param("POST", "/nope", 404, id="post-unknown"),
    ],
)
def test_unknown_paths_and_methods(
    server: HttpServer, method: str, path: str, expected: int
) -> None:
    status, headers, _ = _get(server.port, path, method=method)
    assert status == expected
    if expected == 405:
        assert headers["allow"] == "GET, HEAD"


def test_request_bodies_are_not_read_and_change_nothing(server: HttpServer) -> None:
    answer = _raw(
        server.port,
        b"POST /readyz HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nready=true\n",
    )
    assert _status(answer) == 405
    answer = _raw(server.port, b"GET /readyz HTTP/1.1\r\nContent-Length: 4\r\n\r\nok\r\n")
    assert _status(answer) == 503 and answer.endswith(b"no reconcile pass yet\n")


@pytest.mark.parametrize(
    "request_,status",
    [
        pytest.param(b"GARBAGE\r\n\r\n", 400, id="malformed-request-line"),
        pytest.param(b"GET /healthz HTTP/9.9\r\n\r\n", 505, id="unknown-version"),
        pytest.param(b"GET /" + b"x" * 70_000 + b" HTTP/1.1\r\n\r\n", 414, id="huge-target"),
        pytest.param(b"GET /healthz HTTP/1.1\r\nX: " + b"y" * 70_000 + b"\r\n\r\n", 431,
                     id="huge-header"),
        pytest.param(b"GET /healthz HTTP/1.1\r\n" + b"X: y\r\n" * 101 + b"\r\n", 431,
                     id="too-many-headers"),
    ],
)  # fmt: skip
def test_malformed_and_oversized_requests(server: HttpServer, request_: bytes, status: int) -> None:
    assert _status(_raw(server.port, request_)) == status
    assert _get(server.port, "/healthz")[0] == 200  # serving on


def test_connections_are_bounded_and_idle_ones_dropped(
    health: Health, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(endpoints, "MAX_CONNECTIONS", 2)
    monkeypatch.setattr(endpoints._Handler, "timeout", 0.5)
    srv = HttpServer("127.0.0.1:0", CollectorRegistry(), health)
    srv.start()
    try:
        idle = [socket.create_connection(("127.0.0.1", srv.port), timeout=5) for _ in range(2)]
        time.sleep(0.1)
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as refused:
            assert refused.recv(1) == b""  # both slots taken: closed at once
        for conn in idle:
            assert conn.recv(1) == b""  # after the idle timeout (0.5 s)
            conn.close()
        time.sleep(0.1)
        assert _get(srv.port, "/healthz")[0] == 200  # the slots are free again
    finally:
        srv.stop()
    assert "Traceback" not in capfd.readouterr().err  # timeouts are not stack traces


def test_a_failing_probe_answers_500_and_the_server_serves_on(
    health: Health, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> tuple[bool, str]:
        raise RuntimeError("probe bug")

    health.readiness = broken  # type: ignore[method-assign]
    srv = HttpServer("127.0.0.1:0", CollectorRegistry(), health)
    srv.start()
    try:
        assert _get(srv.port, "/readyz")[::2] == (500, b"error\n")
        assert _get(srv.port, "/healthz")[0] == 200
    finally:
        srv.stop()
    assert [r.getMessage() for r in caplog.records] == ["probe failed"]  # through logging


def test_stop_ends_the_server_and_frees_the_port(health: Health) -> None:
    srv = HttpServer("127.0.0.1:0", CollectorRegistry(), health)
    srv.start()
    assert _get(srv.port, "/healthz")[0] == 200
    srv.stop()
    assert srv._thread is not None and not srv._thread.is_alive()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", srv.port), timeout=1)


def test_stop_before_start_closes_the_socket(health: Health) -> None:
    srv = HttpServer("127.0.0.1:0", CollectorRegistry(), health)
    port = srv.port
    srv.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1)


@pytest.mark.parametrize(
    "address,expected",
    [
        pytest.param(":8080", ("0.0.0.0", 8080), id="port-only"),
        pytest.param("127.0.0.1:0", ("127.0.0.1", 0), id="host-port"),
        pytest.param("[::1]:9", ("::1", 9), id="ipv6"),
    ],
)
def test_parse_bind_address(address: str, expected: tuple[str, int]) -> None:
    assert parse_bind_address(address) == expected


@pytest.mark.parametrize("address", ["8080", "host:", "h:99999", "h:x"])
def test_bad_bind_address(address: str) -> None:
    with pytest.raises(ValueError, match="not host:port"):
        parse_bind_address(address)


@pytest.mark.parametrize(
    "address,hosts",
    [
        # all interfaces means IPv6 too: on an IPv6-only cluster the kubelet probes the
        # pod's IPv6 address, and an IPv4-only listener fails every probe
        pytest.param(":0", ["127.0.0.1", "[::1]"], id="all-interfaces-dual-stack"),
        pytest.param("[::1]:0", ["[::1]"], id="ipv6-host"),
        pytest.param("127.0.0.1:0", ["127.0.0.1"], id="ipv4-host"),
    ],
)
def test_bind_addresses_are_reachable(address: str, hosts: list[str], health: Health) -> None:
    server = HttpServer(address, CollectorRegistry(), health)
    server.start()
    try:
        for host in hosts:
            with urllib.request.urlopen(f"http://{host}:{server.port}/healthz", timeout=5) as r:
                assert r.status == 200
    finally:
        server.stop()
