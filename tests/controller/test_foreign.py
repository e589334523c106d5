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
