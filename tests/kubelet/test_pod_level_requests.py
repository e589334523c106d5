"""The providers' pod-scope totals: upstream's ``PodRequests`` rule (``podspec.pod_level``)
applied to what each provider aligns, with each provider's own twist."""

from __future__ import annotations

from typing import Any

from fakenrt.kubelet.provider_cpu import pod_guaranteed_cpus
from fakenrt.kubelet.provider_memory import pod_memory_requests
from tests.kubelet.builders import GI, container, pod


def sidecar(name: str, **resources: Any) -> dict[str, Any]:
    manifest = container(name, **resources)
    manifest["restartPolicy"] = "Always"
    return manifest


def test_cpus_count_a_sidecar_in_every_later_step_and_beside_the_apps() -> None:
    # inits: sidecar 2, then init 3 (peak 2 + 3 = 5); apps 1 + sidecar 2 = 3 -> 5
    spec = pod("p", container("app", cpu=1), init=[sidecar("s", cpu=2), container("i", cpu=3)])
    assert pod_guaranteed_cpus(spec) == 5
    # a regular init container before the sidecar does not count it: max(3, 1 + 2) = 3
    spec = pod("p", container("app", cpu=1), init=[container("i", cpu=3), sidecar("s", cpu=2)])
    assert pod_guaranteed_cpus(spec) == 3


def test_memory_keeps_only_the_types_app_containers_request() -> None:
    spec = pod(
        "p",
        container("app", cpu=1, memory="1Gi"),
        init=[container("i", cpu=1, memory="4Gi", hugepages_1Gi="2Gi")],
    )
    assert pod_memory_requests(spec) == {"memory": 4 * GI}
