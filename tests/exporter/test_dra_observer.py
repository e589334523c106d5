"""The exporter's DRA view across passes (exporter.dra_observer): device answers kept per
slice generation, the metrics of a pass, one warning and one Event per misaligned pod,
series removed when a pod is aligned again or gone."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import CollectorRegistry

from exporter.dra_numa import RULE_NONE, RULE_PCI, RULE_STANDARD, DeviceNuma
from exporter.dra_observer import DraObserver, PodObservation
from exporter.metrics import ExporterMetrics
from exporter.pods import PodView
from exporter.resources import ClaimDevice, ClaimResources, ContainerResources, PodResources

GPU = "gpu.nvidia.com"
#: device -> (numa, rule): gpu-0/1 on node 0, gpu-2/3 on node 1 (by PCI), gpu-9 unknown
WHERE = {
    "gpu-0": DeviceNuma(0, RULE_STANDARD, "resource.kubernetes.io/numaNode"),
    "gpu-1": DeviceNuma(0, RULE_STANDARD, "resource.kubernetes.io/numaNode"),
    "gpu-2": DeviceNuma(1, RULE_PCI, "0000:81:00.0"),
    "gpu-3": DeviceNuma(1, RULE_PCI, "0000:82:00.0"),
}
CPU_MAP = {0: 0, 1: 0, 2: 1, 3: 1}


class World:
    def __init__(self) -> None:
        self.generation = 1
        self.where = dict(WHERE)
        self.asked: list[str] = []
        self.events: list[tuple[str, str]] = []
        self.registry = CollectorRegistry()
        self.metrics = ExporterMetrics(self.registry)
        self.observer = DraObserver(
            locate=self.locate,
            generation=lambda: self.generation,
            metrics=self.metrics,
            record_event=lambda pod, message: self.events.append((pod.uid, message)),
        )

    def locate(self, device: ClaimDevice) -> DeviceNuma:
        self.asked.append(device.device)
        return self.where.get(device.device, DeviceNuma(None, RULE_NONE))

    def value(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(f"numa_exporter_{name}", labels)

    def observe(self, *pods: tuple[PodView, PodResources]) -> None:
        self.observer.observe_pass(
            PodObservation(view, report, self.observer.misalignments(report, CPU_MAP))
            for view, report in pods
        )


def pod(
    name: str, cpus: tuple[int, ...], *gpus: str, uid: str | None = None
) -> tuple[PodView, PodResources]:
    devices = tuple(ClaimDevice(GPU, "node-a", g, (f"k8s.{GPU}/device={g}",)) for g in gpus)
    claims = (ClaimResources(f"{name}-gpu", "ns", devices),) if devices else ()
    report = PodResources("ns", name, (ContainerResources("main", cpu_ids=cpus, dynamic=claims),))
    view = PodView("ns", name, uid or f"uid-{name}", phase="Running")
    return view, report


def test_a_misaligned_pod_is_named_once_in_the_log_once_as_an_event_and_as_a_series(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = World()
    far = pod("far", (0, 1), "gpu-2")  # CPUs on node 0, GPU on node 1
    near = pod("near", (2,), "gpu-3")
    loose = pod("loose", (), "gpu-0")  # no exclusive CPUs: nothing to misalign with
    with caplog.at_level(logging.INFO, logger="exporter.dra_observer"):
        world.observe(far, near, loose)
        world.observe(far, near, loose)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith("pod ns/far runs misaligned: container main: DRA device ")
    assert f"{GPU}/node-a/gpu-2 on NUMA node 1" in warnings[0]
    assert "exclusive CPUs and memory on NUMA node 0" in warnings[0]
    assert world.events == [("uid-far", warnings[0])]
    assert world.value("dra_pod_misaligned", namespace="ns", pod="far") == 1
    assert world.value("dra_pod_misaligned", namespace="ns", pod="near") is None
    assert world.value("dra_misaligned_pods") == 1
    assert world.value("dra_devices", rule=RULE_PCI) == 2
    assert world.value("dra_devices", rule=RULE_STANDARD) == 1
    assert world.value("dra_devices", rule=RULE_NONE) == 0


def test_the_series_goes_with_the_pod_and_a_new_pod_of_the_same_name_is_new(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = World()
    world.observe(pod("far", (0,), "gpu-2"))
    world.observe()  # the pod is gone
    assert world.value("dra_pod_misaligned", namespace="ns", pod="far") is None
    assert world.value("dra_misaligned_pods") == 0
    assert world.value("dra_devices", rule=RULE_PCI) == 0
    world.observe(pod("far", (0,), "gpu-3", uid="uid-far-2"))  # recreated, misaligned again
    assert [uid for uid, _ in world.events] == ["uid-far", "uid-far-2"]
    assert world.value("dra_pod_misaligned", namespace="ns", pod="far") == 1


def test_one_event_per_pod_even_when_it_leaves_a_pass_and_comes_back() -> None:
    world = World()
    far = pod("far", (0,), "gpu-2")
    world.observe(far)
    world.observe()  # e.g. the API cache relisting
    world.observe(far)
    assert len(world.events) == 1


def test_a_pod_aligned_again_after_its_slices_changed_is_logged_and_its_series_removed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = World()
    far = pod("far", (0,), "gpu-2")
    world.observe(far)
    world.where["gpu-2"] = DeviceNuma(0, RULE_STANDARD, "resource.kubernetes.io/numaNode")
    world.observe(far)  # the same generation: the answer kept
    assert world.value("dra_misaligned_pods") == 1
    world.generation += 1  # the driver republished its pool
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="exporter.dra_observer"):
        world.observe(far)
    assert world.value("dra_misaligned_pods") == 0
    assert world.value("dra_pod_misaligned", namespace="ns", pod="far") is None
    assert [r.getMessage() for r in caplog.records] == ["pod no longer runs misaligned"]


def test_each_device_is_located_once_per_slice_generation() -> None:
    world = World()
    pods = [pod("a", (0,), "gpu-0", "gpu-2"), pod("b", (2,), "gpu-2")]
    world.observe(*pods)
    world.observe(*pods)
    assert sorted(world.asked) == ["gpu-0", "gpu-2"]
    world.generation += 1
    world.observe(*pods)
    assert sorted(world.asked) == ["gpu-0", "gpu-0", "gpu-2", "gpu-2"]


def test_a_device_shared_by_two_containers_counts_once_by_its_rule() -> None:
    world = World()
    shared = ClaimResources("c", "ns", (ClaimDevice(GPU, "node-a", "gpu-9"),))
    report = PodResources(
        "ns", "two", tuple(ContainerResources(n, dynamic=(shared,)) for n in ("a", "b"))
    )
    world.observe((PodView("ns", "two", "uid-two", phase="Running"), report))
    assert world.value("dra_devices", rule=RULE_NONE) == 1


def test_without_an_event_sink_the_pod_is_still_logged_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = CollectorRegistry()
    observer = DraObserver(
        locate=lambda d: WHERE[d.device],
        generation=lambda: 0,
        metrics=ExporterMetrics(registry),
    )
    view, report = pod("far", (0,), "gpu-2")
    with caplog.at_level(logging.WARNING, logger="exporter.dra_observer"):
        observer.observe_pass(
            [PodObservation(view, report, observer.misalignments(report, CPU_MAP))]
        )
    assert len(caplog.records) == 1
    assert registry.get_sample_value("numa_exporter_dra_misaligned_pods") == 1
