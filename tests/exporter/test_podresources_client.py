"""The gRPC client (grpcio) against a fake podresources server on a real unix socket."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from exporter.podresources_client import (
    PodResourcesClient,
    PodResourcesTimeout,
    PodResourcesTooLarge,
    PodResourcesUnavailable,
    PodResourcesUnimplemented,
)
from exporter.podresources_settings import MAX_RECEIVE_BYTES
from exporter.resources import (
    AllocatableResources,
    ContainerResources,
    DeviceAssignment,
    MemoryBlock,
)
from tests.exporter import scenarios as s
from tests.exporter.fake_podresources import FakePodResources

ALL = [
    s.CPU_ONLY,
    s.GPU_AND_CPU,
    s.MULTI_ZONE,
    s.MEMORY_AND_HUGEPAGES,
    s.MULTI_NUMA_GROUP,
    s.NO_TOPOLOGY_DEVICE,
    s.UNKNOWN_CPUS,
    s.SHARED_POOL,
]


def _client(
    fake: FakePodResources, errors: Counter[tuple[str, str]] | None = None, **kw: Any
) -> PodResourcesClient:
    def on_error(method: str, code: str) -> None:
        if errors is not None:
            errors[(method, code)] += 1

    return PodResourcesClient(fake.socket_path, on_error=on_error, **kw)


def test_list_round_trips_every_field(fake_kubelet: FakePodResources) -> None:
    fake_kubelet.set_pods(ALL)
    client = _client(fake_kubelet)
    assert client.list() == tuple(ALL)
    client.close()


def test_allocatable_and_memory_manager_detection(fake_kubelet: FakePodResources) -> None:
    client = _client(fake_kubelet)
    assert not client.allocatable().memory_manager_static
    fake_kubelet.allocatable = AllocatableResources(
        cpu_ids=(0, 1),
        devices=(DeviceAssignment(s.GPU, ("GPU-0",), (0,)),),
        memory=(MemoryBlock("memory", 64 * s.GI, (0,)),),
    )
    result = client.allocatable()
    assert result.memory_manager_static
    assert result.devices == (DeviceAssignment(s.GPU, ("GPU-0",), (0,)),)
    client.close()


def test_allocatable_unimplemented_means_no_memory_manager_view(
    fake_kubelet: FakePodResources,
) -> None:
    fake_kubelet.allocatable = AllocatableResources(memory=(MemoryBlock("memory", s.GI, (0,)),))
    fake_kubelet.allocatable_implemented = False
    errors: Counter[tuple[str, str]] = Counter()
    client = _client(fake_kubelet, errors)
    with pytest.raises(PodResourcesUnimplemented):
        client.allocatable()
    assert client.allocatable_or_empty() == AllocatableResources()
    assert errors == {("GetAllocatableResources", "UNIMPLEMENTED"): 2}
    client.close()


def test_get_and_unimplemented(fake_kubelet: FakePodResources) -> None:
    fake_kubelet.set_pods([s.CPU_ONLY])
    errors: Counter[tuple[str, str]] = Counter()
    client = _client(fake_kubelet, errors)
    assert client.get("default", "cpu-only") == s.CPU_ONLY
    fake_kubelet.get_implemented = False
    with pytest.raises(PodResourcesUnimplemented, match="Get failed: UNIMPLEMENTED"):
        client.get("default", "cpu-only")
    assert errors == {("Get", "UNIMPLEMENTED"): 1}
    client.close()


def test_call_exceeding_its_deadline(fake_kubelet: FakePodResources) -> None:
    errors: Counter[tuple[str, str]] = Counter()
    client = _client(fake_kubelet, errors, timeout_s=0.2)
    fake_kubelet.delay_s = 5.0
    with pytest.raises(PodResourcesTimeout, match="DEADLINE_EXCEEDED"):
        client.list()
    fake_kubelet.release.set()
    fake_kubelet.delay_s = 0.0
    assert client.list() == ()
    assert errors == {("List", "DEADLINE_EXCEEDED"): 1}
    client.close()


def test_socket_absent_then_created(short_dir: Path) -> None:
    fake = FakePodResources(short_dir / "kubelet.sock", [s.CPU_ONLY])
    errors: Counter[tuple[str, str]] = Counter()
    client = PodResourcesClient(
        fake.socket_path, timeout_s=2, on_error=lambda m, c: errors.update([(m, c)])
    )
    with pytest.raises(PodResourcesUnavailable, match=r"kubelet\.sock"):
        client.list()
    with fake:
        assert client.list() == (s.CPU_ONLY,)
    assert errors == {("List", "UNAVAILABLE"): 1}
    client.close()


def test_errors_say_what_to_check(short_dir: Path, fake_kubelet: FakePodResources) -> None:
    """Each failure is one line naming the socket and what a user can do about it."""
    regular = short_dir / "not-a-socket"
    regular.write_text("")
    for path, expected in (
        (short_dir / "absent.sock", "does not exist: the kubelet is not running, or its "
         "pod-resources directory is not mounted there"),
        (regular, "is not a unix socket"),
    ):  # fmt: skip
        client = PodResourcesClient(path, timeout_s=2)
        with pytest.raises(PodResourcesUnavailable) as failed:
            client.list()
        message = str(failed.value)
        assert message.startswith("podresources List failed: UNAVAILABLE: ")
        assert str(path) in message and expected in message and "\n" not in message
        client.close()
    fake_kubelet.get_implemented = False
    fake_kubelet.allocatable_implemented = False
    client = _client(fake_kubelet)
    with pytest.raises(PodResourcesUnimplemented, match="feature gate KubeletPodResourcesGet"):
        client.get("default", "cpu-only")
    with pytest.raises(PodResourcesUnimplemented, match=r"served from Kubernetes 1\.23"):
        client.allocatable()
    client.close()


def test_kubelet_restart_recreates_the_socket(fake_kubelet: FakePodResources) -> None:
    fake_kubelet.set_pods([s.CPU_ONLY])
    client = _client(fake_kubelet, timeout_s=2)
    assert client.list() == (s.CPU_ONLY,)
    generation = client.generation
    fake_kubelet.stop()
    with pytest.raises(PodResourcesUnavailable):
        client.list()
    fake_kubelet.set_pods([s.GPU_AND_CPU])
    fake_kubelet.start()
    assert client.list() == (s.GPU_AND_CPU,)
    assert client.generation > generation  # a new channel: allocatable is read again
    client.close()


def test_restart_between_calls_is_invisible(fake_kubelet: FakePodResources) -> None:
    client = _client(fake_kubelet, timeout_s=2)
    assert client.list() == ()
    fake_kubelet.restart()  # new socket inode: the client builds a new channel first
    fake_kubelet.set_pods([s.CPU_ONLY])
    assert client.list() == (s.CPU_ONLY,)
    client.close()


def test_large_responses_up_to_the_receive_limit(fake_kubelet: FakePodResources) -> None:
    # ~ 7 MiB: above gRPC's 4 MiB default, below the 16 MiB limit
    big = [
        s.pod(f"pod-{i}", ContainerResources("main", cpu_ids=tuple(range(100_000, 108_000))))
        for i in range(300)
    ]
    fake_kubelet.set_pods(big)
    client = _client(fake_kubelet)
    assert len(client.list()) == 300
    assert MAX_RECEIVE_BYTES == 16 * 1024 * 1024
    client.close()


def test_a_connection_the_kubelet_closed_while_idle_is_replaced(tmp_path: Path) -> None:
    """The server ends idle connections (GOAWAY, then close): the next call goes out on a
    new connection (grpc's own) and succeeds, nothing is reported as failed."""
    fake = FakePodResources(
        tmp_path / "idle.sock", [s.CPU_ONLY], server_options=[("grpc.max_connection_idle_ms", 100)]
    ).start()
    errors: Counter[tuple[str, str]] = Counter()
    client = _client(fake, errors)
    try:
        assert client.list() == (s.CPU_ONLY,)
        for _ in range(3):
            time.sleep(0.5)  # idle: the server says GOAWAY and closes
            assert client.list() == (s.CPU_ONLY,)
        assert errors == Counter()
    finally:
        client.close()
        fake.stop()


def test_an_answer_above_the_limit_is_refused(fake_kubelet: FakePodResources) -> None:
    errors: Counter[tuple[str, str]] = Counter()
    client = _client(fake_kubelet, errors, max_receive_bytes=1000)
    fake_kubelet.set_pods([s.CPU_ONLY] * 50)
    with pytest.raises(PodResourcesTooLarge, match="larger than the limit"):
        client.list()
    assert errors == {("List", "RESOURCE_EXHAUSTED"): 1}
    fake_kubelet.set_pods([s.CPU_ONLY] * 5)
    assert len(client.list()) == 5  # below the limit: the same client goes on
    client.close()
