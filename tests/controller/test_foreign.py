"""A profile's foreign `allocated` as pods (issue 11, item 1a): created bound to the node,
holding exactly those resources, reported by podresources, counted in the NRT fingerprint,
never admitted nor completed by the simulated kubelet."""

from __future__ import annotations

from typing import Any

from fakenrt.controller.effects import CreatePod, PatchPodStatus, PublishNrt, ServePodResources
from fakenrt.controller.fleet import Fleet
from fakenrt.controller.nodeobjects import NodeIdentity
from fakenrt.controller.settings import ControllerSettings
from fakenrt.nrt import fingerprint
from fakenrt.nrt.loaded import FOREIGN_LABEL
from fakenrt.podspec import QOSClass, pod_from_manifest, qos_class
from tests.controller.conftest import ManualClock, make_profiles
from tests.controller.podmanifests import pod

NODE = "f1"
GI = 1024**3


def profile() -> dict[str, Any]:
    return {
        "name": NODE,
        "kubelet": {"topologyManagerPolicy": "restricted"},
        "zones": [
            {
                "id": 0,
                "cpus": "0-7",
                "memory": "16Gi",
                "devices": {"nvidia.com/gpu": 2},
                "allocated": {"cpu": 2, "memory": "4Gi", "nvidia.com/gpu": 1},
            },
            {"id": 1, "cpus": "8-15", "memory": "16Gi", "allocated": {"cpu": 0}},
        ],
    }


def fleet(clock: ManualClock, **settings: Any) -> Fleet:
    (p,) = make_profiles(profile())
    return Fleet(
        [(p, NodeIdentity(p.name, 0))],
        ControllerSettings(nrt_refresh=0, default_run_duration=5.0, **settings),
        clock=clock,
    )


def attributes(body: Any) -> dict[str, str]:
    return {a["name"]: a["value"] for a in body["attributes"]}


def test_foreign_pods_are_created_served_fingerprinted_and_kept(clock: ManualClock) -> None:
    f = fleet(clock)
    effects = f.start([])
    (create,) = [e for e in effects if isinstance(e, CreatePod)]
    name = f"fakenrt-foreign-{NODE}-node-0"  # zone 1 holds nothing: no pod
    assert (create.namespace, create.name) == ("kube-system", name)
    manifest = create.manifest
    assert manifest["spec"]["nodeName"] == NODE
    assert manifest["metadata"]["labels"][FOREIGN_LABEL] == NODE
    spec = pod_from_manifest(manifest)
    assert qos_class(spec) == QOSClass.GUARANTEED
    (container,) = spec.containers
    assert {k: int(v) for k, v in container.limits.items()} == {
        "cpu": 2,
        "memory": 4 * GI,
        "nvidia.com/gpu": 1,
    }
    (served,) = [e for e in effects if isinstance(e, ServePodResources)]
    (held,) = served.allocations
    assert held.key == f"kube-system/{name}"
    (c,) = held.containers
    assert len(c.cpus) == 2 and c.cpus <= set(range(8))
    assert len(c.devices["nvidia.com/gpu"]) == 1
    assert [(b.type, b.size, set(b.numa)) for b in c.memory] == [("memory", 4 * GI, {0})]
    (publish,) = [e for e in effects if isinstance(e, PublishNrt)]
    expected = fingerprint([("kube-system", name)])
    assert attributes(publish.body)["nodeTopologyPodsFingerprint"] == expected

    # The watch shows the created pod: it runs without admission and never completes.
    created = dict(manifest, metadata=dict(manifest["metadata"], uid="u-foreign"))
    effects = f.pod_event("ADDED", created)
    (patch,) = [e for e in effects if isinstance(e, PatchPodStatus)]
    assert patch.status["phase"] == "Running"
    assert not any(isinstance(e, PublishNrt | ServePodResources) for e in effects)
    clock.advance(60)
    assert not [e for e in f.advance() if isinstance(e, PatchPodStatus)]
    # An ordinary pod still sees the GPU the foreign pod holds: one left on zone 0.
    effects = f.pod_event("ADDED", pod("two", NODE, cpu="1", memory="1Gi", gpus=2))
    (patch,) = [e for e in effects if isinstance(e, PatchPodStatus)]
    assert patch.status["phase"] == "Failed"


def test_a_restarted_controller_does_not_create_existing_foreign_pods(clock: ManualClock) -> None:
    f = fleet(clock)
    (create,) = [e for e in f.start([]) if isinstance(e, CreatePod)]
    existing = dict(
        create.manifest,
        metadata=dict(create.manifest["metadata"], uid="u-1"),
        status={"phase": "Running", "startTime": "2027-01-01T00:00:00Z"},
    )
    again = fleet(clock)
    effects = again.start([existing])
    assert not [e for e in effects if isinstance(e, CreatePod)]
    assert not [e for e in effects if isinstance(e, PatchPodStatus)]


def test_foreign_requests_are_pods_that_hold_nothing_exclusively(clock: ManualClock) -> None:
    """``foreignRequests`` become ``pods`` pods, the first requesting the cpu and memory:
    created and Running like the zones' foreign pods, listed by podresources with nothing
    held, out of the NRT fingerprint, and counted in the kubelet's fit check - as a
    scheduler counts them."""
    (p,) = make_profiles(
        dict(profile(), maxPods=4, foreignRequests={"cpu": "3500m", "memory": "1Gi", "pods": 2})
    )
    f = Fleet([(p, NodeIdentity(p.name, 0))], ControllerSettings(nrt_refresh=0), clock=clock)
    effects = f.start([])
    creates = [e for e in effects if isinstance(e, CreatePod)]
    assert [c.name for c in creates] == [
        f"fakenrt-foreign-{NODE}-node-0",
        f"fakenrt-foreign-{NODE}-requests-0",
        f"fakenrt-foreign-{NODE}-requests-1",
    ]
    first, second = (pod_from_manifest(c.manifest) for c in creates[1:])
    assert qos_class(first) == QOSClass.BURSTABLE and qos_class(second) == QOSClass.BEST_EFFORT
    assert {k: str(v) for k, v in first.containers[0].requests.items()} == {
        "cpu": "3.5",
        "memory": str(GI),
    }
    assert first.containers[0].limits == {} and second.containers[0].requests == {}
    (served,) = [e for e in effects if isinstance(e, ServePodResources)]
    listed = {a.key: a for a in served.allocations}
    (held,) = listed[f"kube-system/fakenrt-foreign-{NODE}-requests-0"].containers
    assert (held.cpus, dict(held.devices), held.memory) == (frozenset(), {}, ())
    (publish,) = [e for e in effects if isinstance(e, PublishNrt)]
    only_exclusive = fingerprint([("kube-system", f"fakenrt-foreign-{NODE}-node-0")])
    assert attributes(publish.body)["nodeTopologyPodsFingerprint"] == only_exclusive
    for i, create in enumerate(creates):
        created = dict(create.manifest, metadata=dict(create.manifest["metadata"], uid=f"u{i}"))
        (patch,) = [e for e in f.pod_event("ADDED", created) if isinstance(e, PatchPodStatus)]
        assert patch.status["phase"] == "Running"
    # 16 CPUs - 2 held by the zone's foreign pod - 3.5 requested: 10.5 left.
    effects = f.pod_event("ADDED", pod("big", NODE, cpu="11", guaranteed=False))
    (patch,) = [e for e in effects if isinstance(e, PatchPodStatus)]
    assert (patch.status["phase"], patch.status["reason"]) == ("Failed", "OutOfcpu")
    assert "used: 5500" in patch.status["message"]
    # maxPods 4: three foreign pods, so one more pod fits, not two.
    ok = f.pod_event("ADDED", pod("a", NODE, cpu="1", guaranteed=False))
    assert [e.status["phase"] for e in ok if isinstance(e, PatchPodStatus)] == ["Running"]
    effects = f.pod_event("ADDED", pod("b", NODE, cpu="1", guaranteed=False))
    (patch,) = [e for e in effects if isinstance(e, PatchPodStatus)]
    assert patch.status["reason"] == "OutOfpods"
