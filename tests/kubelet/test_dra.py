"""The simulated kubelet's DRA manager: claims prepared after admission and never aligned
(``pkg/kubelet/cm/dra/manager.go``), every way preparing fails as the kubelet words it,
shared claims, and what podresources lists of them."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fakenrt.dra.claims import ResourceClaim, claim_from_manifest
from fakenrt.kubelet.allocation import ClaimResource, DynamicResource
from fakenrt.kubelet.node import NodeState
from fakenrt.podresources_messages import pod_message
from fakenrt.podresources_report import device_numa
from fakenrt.podspec import PodSpec, pod_from_manifest
from fakenrt.profiles import parse_profiles
from fakenrt.profiles.model import NodeProfile

GPU = "gpu.nvidia.com"


def _profile(policy: str = "single-numa-node", **dra: Any) -> NodeProfile:
    (profile,) = parse_profiles(
        {
            "nodes": [
                {
                    "name": "n1",
                    "kubelet": {"topologyManagerPolicy": policy},
                    "dra": dra,
                    "shape": {
                        "numaNodes": 2,
                        "coresPerNumaNode": 4,
                        "memoryPerNumaNode": "8Gi",
                        "draDevicesPerNumaNode": {GPU: 2},
                    },
                }
            ]
        },
        source="t",
    )
    return profile


def _pod(
    name: str,
    *,
    cpu: int = 2,
    claims: dict[str, str] | None = None,
    templates: dict[str, str] | None = None,
    uid: str = "",
    statuses: list[dict[str, Any]] | None = None,
) -> PodSpec:
    """A Guaranteed pod of ``cpu`` CPUs whose one container uses every claim given:
    ``claims`` pod claim -> ResourceClaim name, ``templates`` pod claim -> template."""
    pod_claims = [{"name": k, "resourceClaimName": v} for k, v in (claims or {}).items()]
    pod_claims += [
        {"name": k, "resourceClaimTemplateName": v} for k, v in (templates or {}).items()
    ]
    manifest: dict[str, Any] = {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}"},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "resources": {
                        "limits": {"cpu": cpu, "memory": "1Gi"},
                        "claims": [{"name": c["name"]} for c in pod_claims],
                    },
                }
            ],
            "resourceClaims": pod_claims,
        },
    }
    if statuses is not None:
        manifest["status"] = {"resourceClaimStatuses": statuses}
    return pod_from_manifest(manifest)


def _claim(
    name: str,
    devices: list[str] | None,
    *,
    reserved: list[str] = (),  # type: ignore[assignment]
    owner: str | None = None,
    driver: str = GPU,
    pool: str = "n1",
) -> ResourceClaim:
    manifest: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns", "uid": f"claim-{name}"},
        "status": {"reservedFor": [{"resource": "pods", "name": "x", "uid": u} for u in reserved]},
    }
    if owner is not None:
        manifest["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "x", "uid": owner, "controller": True}
        ]
    if devices is not None:
        manifest["status"]["allocation"] = {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": driver, "pool": pool, "device": d} for d in devices
                ]
            }
        }
    return claim_from_manifest(manifest)


def _lookup(*claims: ResourceClaim) -> Any:
    by_name = {(c.namespace, c.name): c for c in claims}
    return lambda namespace, name: by_name.get((namespace, name))


def _admitted(state: NodeState, pod: PodSpec) -> None:
    result = state.admit(pod)
    assert result.admit, result


def test_claims_are_prepared_after_admission_without_alignment() -> None:
    """single-numa-node, 2 exclusive CPUs: the CPU Manager picks NUMA node 0; the claim's
    GPU (allocated by the scheduler) is gpu-2 on NUMA node 1 - no TopologyAffinityError."""
    state = NodeState.from_profile(_profile())
    pod = _pod("p", claims={"gpu": "c1"})
    result = state.admit(pod)
    assert result.admit
    assert "gpu.nvidia.com" not in str(result.hints)  # the DRA manager gives no hints
    assert state.prepare(pod.key, _lookup(_claim("c1", ["gpu-2"], reserved=["uid-p"]))) is None
    (container,) = state.allocations()[pod.key].containers
    assert container.cpus <= frozenset(range(4))  # NUMA node 0
    assert container.dynamic == (
        DynamicResource(
            "c1",
            "ns",
            (ClaimResource(GPU, "n1", "gpu-2", ("k8s.gpu.nvidia.com/device=gpu-2",)),),
        ),
    )
    assert state.prepared(pod.key)


def test_an_unallocated_claim_leaves_the_pod_holding_its_cpus_until_it_is() -> None:
    state = NodeState.from_profile(_profile())
    pod = _pod("p", claims={"gpu": "c1"})
    _admitted(state, pod)
    error = state.prepare(pod.key, _lookup(_claim("c1", None, reserved=["uid-p"])))
    assert error == "ResourceClaim c1: not allocated"
    assert not state.prepared(pod.key)
    (container,) = state.allocations()[pod.key].containers
    assert len(container.cpus) == 2 and container.dynamic == ()
    assert state.zone_usage()[0]["cpu"] == 2
    assert state.prepare(pod.key, _lookup(_claim("c1", ["gpu-0"], reserved=["uid-p"]))) is None
    assert state.allocations()[pod.key].containers[0].dynamic[0].resources[0].device == "gpu-0"


def test_every_validation_failure_as_the_kubelet_words_it() -> None:
    state = NodeState.from_profile(_profile())
    pod = _pod("p", claims={"gpu": "c1"})
    _admitted(state, pod)
    assert state.prepare(pod.key, _lookup()) == (
        'fetch ResourceClaim c1: resourceclaims.resource.k8s.io "c1" not found'
    )
    assert state.prepare(pod.key, _lookup(_claim("c1", ["gpu-0"]))) == (
        "pod p (uid-p) is not allowed to use ResourceClaim c1 (claim-c1)"
    )
    other = _claim("c1", ["gpu-0"], reserved=["uid-p"], driver="gpu.amd.com")
    assert state.prepare(pod.key, _lookup(other)) == "DRA driver gpu.amd.com is not registered"
    # nothing was cached by a failed validation: the container reports no claims at all
    assert state.allocations()[pod.key].containers[0].dynamic == ()

    templated = _pod("t", templates={"gpu": "tmpl"})
    _admitted(state, templated)
    assert state.prepare(templated.key, _lookup()) == ('pod "ns/t": ResourceClaim not created yet')


def test_a_templates_claim_must_belong_to_the_pod() -> None:
    state = NodeState.from_profile(_profile())
    statuses = [{"name": "gpu", "resourceClaimName": "t-gpu-x1"}]
    pod = _pod("t", templates={"gpu": "tmpl"}, statuses=statuses)
    _admitted(state, pod)
    stranger = _claim("t-gpu-x1", ["gpu-1"], reserved=["uid-t"], owner="someone-else")
    assert state.prepare(pod.key, _lookup(stranger)) == (
        "ResourceClaim ns/t-gpu-x1 was not created for Pod ns/t (Pod is not owner)"
    )
    own = _claim("t-gpu-x1", ["gpu-1"], reserved=["uid-t"], owner="uid-t")
    assert state.prepare(pod.key, _lookup(own)) is None
    # a template that needed no claim: nothing to prepare
    nothing = _pod("u", templates={"gpu": "tmpl"}, statuses=[{"name": "gpu"}])
    _admitted(state, nothing)
    assert state.prepare(nothing.key, _lookup()) is None and state.prepared(nothing.key)


def test_a_driver_failure_caches_the_claim_without_devices() -> None:
    state = NodeState.from_profile(_profile())
    pod = _pod("p", claims={"gpu": "c1"})
    _admitted(state, pod)
    wrong = _claim("c1", ["gpu-9"], reserved=["uid-p"])
    error = state.prepare(pod.key, _lookup(wrong))
    assert error == (
        "NodePrepareResources failed for ResourceClaim c1: device n1/gpu-9 is not a device "
        "of driver gpu.nvidia.com on node n1 (pool n1)"
    )
    # cached before the driver was called: listed, with no device
    assert state.allocations()[pod.key].containers[0].dynamic == (DynamicResource("c1", "ns"),)


def test_cdi_ids_accumulate_over_a_drivers_devices_as_the_kubelet_lists_them() -> None:
    """``GetDynamicResources`` appends every device's CDI ids to one slice per driver."""
    state = NodeState.from_profile(_profile())
    pod = _pod("p", claims={"gpu": "c1"})
    _admitted(state, pod)
    assert (
        state.prepare(pod.key, _lookup(_claim("c1", ["gpu-0", "gpu-1"], reserved=["uid-p"])))
        is None
    )
    first, second = state.allocations()[pod.key].containers[0].dynamic[0].resources
    assert first.cdi_ids == ("k8s.gpu.nvidia.com/device=gpu-0",)
    assert second.cdi_ids == (
        "k8s.gpu.nvidia.com/device=gpu-0",
        "k8s.gpu.nvidia.com/device=gpu-1",
    )


def test_a_shared_claim_is_unprepared_when_its_last_pod_goes() -> None:
    state = NodeState.from_profile(_profile())
    a, b = _pod("a", claims={"gpu": "c1"}), _pod("b", claims={"gpu": "c1"})
    claim = _claim("c1", ["gpu-3"], reserved=["uid-a", "uid-b"])
    for pod in (a, b):
        _admitted(state, pod)
        assert state.prepare(pod.key, _lookup(claim)) is None
    state.release(a.key)
    assert state.allocations()[b.key].containers[0].dynamic[0].resources[0].device == "gpu-3"
    assert state.prepared(b.key)
    state.release(b.key)
    fresh = _pod("c", claims={"gpu": "c1"})
    _admitted(state, fresh)
    # the cache is empty again: a claim reserved for others is refused anew
    assert "is not allowed to use ResourceClaim c1" in str(state.prepare(fresh.key, _lookup(claim)))


def test_the_cpu_driver_and_a_gpu_share_one_container() -> None:
    state = NodeState.from_profile(_profile(cpu={}))
    pod = _pod("p", claims={"gpu": "g", "cpus": "c"})
    _admitted(state, pod)
    cpus = claim_from_manifest(
        {
            "metadata": {"name": "c", "namespace": "ns", "uid": "u-c"},
            "status": {
                "reservedFor": [{"resource": "pods", "name": "p", "uid": "uid-p"}],
                "allocation": {
                    "devices": {
                        "results": [
                            {
                                "request": "cpus",
                                "driver": "dra.cpu",
                                "pool": "n1",
                                "device": "cpudevnuma001",
                                "shareID": "7f3c",
                                "consumedCapacity": {"dra.cpu/cpu": "2"},
                            }
                        ]
                    }
                },
            },
        }
    )
    gpu = _claim("g", ["gpu-2"], reserved=["uid-p"])
    assert state.prepare(pod.key, _lookup(cpus, gpu)) is None
    first, second = state.allocations()[pod.key].containers[0].dynamic
    assert (first.claim_name, second.claim_name) == ("g", "c")  # spec.resourceClaims order
    assert second.resources == (
        ClaimResource(
            "dra.cpu", "n1", "cpudevnuma001", ("k8s.dra.cpu/device=cpudevnuma001",), "7f3c"
        ),
    )


def test_podresources_lists_the_claims_of_the_containers_using_them() -> None:
    profile = _profile()
    state = NodeState.from_profile(profile)
    pod = _pod("p", claims={"gpu": "c1"})
    _admitted(state, pod)
    state.prepare(pod.key, _lookup(_claim("c1", ["gpu-1"], reserved=["uid-p"])))
    message = pod_message(state.allocations()[pod.key], device_numa(profile))
    (dynamic,) = message.containers[0].dynamic_resources
    assert (dynamic.claim_name, dynamic.claim_namespace) == ("c1", "ns")
    (resource,) = dynamic.claim_resources
    assert (resource.driver_name, resource.pool_name, resource.device_name) == (GPU, "n1", "gpu-1")
    assert [c.name for c in resource.cdi_devices] == ["k8s.gpu.nvidia.com/device=gpu-1"]
    assert not resource.HasField("share_id")


@given(
    cpus=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=6),
    devices=st.lists(st.sampled_from(["gpu-0", "gpu-1", "gpu-2", "gpu-3"]), min_size=6, max_size=6),
    policy=st.sampled_from(["none", "best-effort", "restricted", "single-numa-node"]),
)
def test_claims_never_change_admission(cpus: list[int], devices: list[str], policy: str) -> None:
    """Whatever the claims hold, every verdict and CPU/memory placement is the one the
    same pods get without claims: the DRA manager takes no part in admission."""
    with_claims = NodeState.from_profile(_profile(policy))
    without = NodeState.from_profile(_profile(policy))
    for i, count in enumerate(cpus):
        claimed = _pod(f"p{i}", cpu=count, claims={"gpu": f"c{i}"})
        plain = _pod(f"p{i}", cpu=count)
        a, b = with_claims.admit(claimed), without.admit(plain)
        assert (a.admit, a.reason) == (b.admit, b.reason)
        if a.admit:
            claim = _claim(f"c{i}", [devices[i]], reserved=[f"uid-p{i}"])
            assert with_claims.prepare(claimed.key, _lookup(claim)) is None
    assert with_claims.zone_usage() == without.zone_usage()
    for key, allocation in without.allocations().items():
        got = with_claims.allocations()[key]
        assert [(c.cpus, c.memory) for c in got.containers] == [
            (c.cpus, c.memory) for c in allocation.containers
        ]
