"""Readiness and liveness decisions, and the HTTP endpoints."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from exporter.health import Health, HttpServer, parse_bind_address
from exporter.metrics import ExporterMetrics
from exporter.promtext import Registry


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_ready_only_when_both_reached_within_the_window() -> None:
    health = Health(clock=FakeClock(), window=3)
    assert health.readiness() == (False, "no reconcile pass yet")
    health.record_pass(podresources_ok=True, api_ok=True)
    assert health.readiness()[0]
    for _ in range(2):
        health.record_pass(podresources_ok=False, api_ok=True)
    assert health.readiness()[0]  # reached 3 passes ago: still within the window
    health.record_pass(podresources_ok=False, api_ok=True)
    ok, reason = health.readiness()
    assert not ok
    assert reason == "not reached in the last 3 passes: kubelet podresources"
    health.record_pass(podresources_ok=True, api_ok=False)
    assert health.readiness()[0]


def test_liveness_fails_when_passes_stop() -> None:
    clock = FakeClock()
    health = Health(clock=clock, stall_after_s=60)
    assert health.liveness()[0]
    clock.now += 61
    assert not health.liveness()[0]
    health.record_pass(podresources_ok=False, api_ok=False)
    assert health.liveness()[0]


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


def test_endpoints() -> None:
    registry = Registry()
    ExporterMetrics(registry)
    health = Health(clock=FakeClock())
    server = HttpServer("127.0.0.1:0", registry, health)
    server.start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        with urllib.request.urlopen(f"{base}/metrics", timeout=5) as resp:
            body = resp.read().decode()
        assert "numa_exporter_build_info{" in body
        with urllib.request.urlopen(f"{base}/healthz", timeout=5) as resp:
            assert resp.status == 200
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{base}/readyz", timeout=5)
        assert err.value.code == 503
        health.record_pass(podresources_ok=True, api_ok=True)
        with urllib.request.urlopen(f"{base}/readyz", timeout=5) as resp:
            assert resp.read() == b"ok\n"
    finally:
        server.stop()


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
def test_bind_addresses_are_reachable(address: str, hosts: list[str]) -> None:
    server = HttpServer(address, Registry(), Health(clock=FakeClock()))
    server.start()
    try:
        for host in hosts:
            with urllib.request.urlopen(f"http://{host}:{server.port}/healthz", timeout=5) as r:
                assert r.status == 200
    finally:
        server.stop()
