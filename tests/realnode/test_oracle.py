"""The oracle's comparison: the simulator's verdicts and placements against a kubelet's
pod statuses and podresources ``List`` (read with the exporter's own client)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.podresources_client import PodResourcesClient
from exporter.resources import DeviceAssignment, MemoryBlock, PodResources
from fakenrt.dra.claims import ResourceClaim, claim_from_manifest
from fakenrt.kubelet.allocation import PodAllocation
from fakenrt.kubelet.node import NodeState
from fakenrt.podresources_server import PodResourcesServer
from fakenrt.podspec import PodSpec, pod_from_manifest
from fakenrt.profiles import NodeProfile, parse_profiles
from fakenrt.realnode.oracle import (
    Difference,
    Verdict,
    compare,
    compared_fields,
    dra_zones,
    kubelet_decided,
    misaligned_pods,
    real_verdicts,
    reproducer,
    simulated_verdicts,
    verdict_from_status,
)
from fakenrt.realnode.scenarios import dra_scenarios, scenario_inputs
from tests.realnode.dynamic import Dynamic, list_dynamic

GI = 1024**3
PROFILE_TEXT = """\
nodes:
- name: smt
  kubelet:
    topologyManagerPolicy: single-numa-node
    memoryManagerPolicy: Static
    reservedSystemCPUs: "0,8"
    cpuManagerPolicyOptions: {full-pcpus-only: "true"}
    systemReserved: {memory: 1Gi}
    reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]
  shape: {numaNodes: 2, coresPerNumaNode: 4, threadsPerCore: 2, memoryPerNumaNode: 8Gi,
          hugepagesPerNumaNode: {hugepages-2Mi: 64Mi}, devicesPerNumaNode: {nvidia.com/gpu: 2}}
"""


def _container(name: str, cpu: str, memory: str, **extra: str) -> dict[str, Any]:
    amounts = {"cpu": cpu, "memory": memory, **extra}
    return {"name": name, "image": "pause", "resources": {"requests": amounts, "limits": amounts}}


def _pod(
    name: str, containers: list[dict[str, Any]], init: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers}
    if init:
        spec["initContainers"] = list(init)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": spec,
    }


SIDECAR = {**_container("proxy", "2", "256Mi"), "restartPolicy": "Always"}
GPU_EXTRA = {"nvidia.com/gpu": "1", "hugepages-2Mi": "8Mi"}
SHARED = {"name": "main", "image": "pause", "resources": {"requests": {"cpu": "500m"}}}
MANIFESTS = [
    _pod("gpu", [_container("main", "4", "1Gi", **GPU_EXTRA)]),
    _pod(
        "side", [_container("main", "2", "1Gi")], init=[_container("setup", "4", "512Mi"), SIDECAR]
    ),
    _pod("huge", [_container("main", "12", "1Gi")]),
    _pod("odd", [_container("main", "3", "1Gi")]),
    _pod("shared", [SHARED]),
]


def _profile() -> NodeProfile:
    (profile,) = parse_profiles(yaml.safe_load(PROFILE_TEXT), source="p.yaml")
    return profile


def _pods() -> list[PodSpec]:
    return [pod_from_manifest(m, source=m["metadata"]["name"]) for m in MANIFESTS]


class _Source:
    def __init__(self, profile: NodeProfile, pods: Sequence[PodAllocation]) -> None:
        self.profile, self.pods = profile, tuple(pods)

    def snapshot(self) -> tuple[NodeProfile, Sequence[PodAllocation]]:
        return self.profile, self.pods


def _agreeing_kubelet(tmp_path: Path) -> tuple[dict[str, dict[str, Any]], tuple[PodResources, ...]]:
    """What a kubelet deciding like the simulator reports: statuses, and a podresources
    List read with the exporter's client from a server serving the same allocations."""
    node = NodeState.from_profile(_profile())
    statuses: dict[str, dict[str, Any]] = {}
    held = []
    for pod in _pods():
        result = node.admit(pod)
        if result.admit and result.allocation is not None:
            statuses[pod.key] = {"phase": "Running"}
            held.append(result.allocation)
        else:
            statuses[pod.key] = {
                "phase": "Failed",
                "reason": result.reason,
                "message": result.message,
            }
    with PodResourcesServer(tmp_path / "kubelet.sock", _Source(_profile(), held)) as server:
        client = PodResourcesClient(server.socket_path, timeout_s=5)
        try:
            listed = client.list()
        finally:
            client.close()
    return statuses, listed


def test_the_scenario_covers_admission_and_both_rejections() -> None:
    verdicts = simulated_verdicts(_profile(), _pods())
    assert [(v.pod, v.admitted, v.reason) for v in verdicts] == [
        ("default/gpu", True, None),
        ("default/side", True, None),
        ("default/huge", False, "TopologyAffinityError"),
        ("default/odd", False, "SMTAlignmentError"),
        ("default/shared", True, None),
    ]
    gpu = verdicts[0].containers[0]
    assert len(gpu.cpus) == 4
    assert gpu.devices["nvidia.com/gpu"].ids is not None  # single-NUMA hint: ids compared
    assert {t for t, _, _ in gpu.memory} == {"memory", "hugepages-2Mi"}
    # plain init containers are not compared (podresources never lists them)
    assert [c.name for c in verdicts[1].containers] == ["main", "proxy"]


def test_a_kubelet_that_decides_like_the_simulator_agrees(tmp_path: Path) -> None:
    statuses, listed = _agreeing_kubelet(tmp_path)
    simulated = simulated_verdicts(_profile(), _pods())
    real = real_verdicts(pods=_pods(), statuses=statuses, listed=listed, profile=_profile())
    assert compare(simulated, real) == ()
    # verdict + message per pod, cpus / devices / memory per compared container
    assert compared_fields(simulated) == 5 * 2 + 3 * (1 + 2 + 1)


def _replace_container(
    listed: Sequence[PodResources], pod: str, container: str, **changes: Any
) -> tuple[PodResources, ...]:
    def change(p: PodResources) -> PodResources:
        containers = tuple(
            dataclasses.replace(c, **changes) if c.name == container else c for c in p.containers
        )
        return dataclasses.replace(p, containers=containers)

    return tuple(change(p) if p.key == pod else p for p in listed)


def _gpu_main(listed: Sequence[PodResources]) -> Any:
    return next(c for p in listed if p.name == "gpu" for c in p.containers)


Statuses = dict[str, dict[str, Any]]
Listed = tuple[PodResources, ...]
SMT_MESSAGE = "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"
GPU_MEMORY = f"hugepages-2Mi 8388608 numa [0]; memory {GI} numa"


def _admit_huge(st: Statuses, ls: Listed) -> tuple[Statuses, Listed]:
    return {**st, "default/huge": {"phase": "Running"}}, ls


def _reject_gpu(st: Statuses, ls: Listed) -> tuple[Statuses, Listed]:
    rejected = {"phase": "Failed", "reason": "OutOfcpu", "message": "m"}
    return {**st, "default/gpu": rejected}, ls


def _other_message(st: Statuses, ls: Listed) -> tuple[Statuses, Listed]:
    return {**st, "default/odd": {**st["default/odd"], "message": "other"}}, ls


def _other_cpus(st: Statuses, ls: Listed) -> tuple[Statuses, Listed]:
    return st, _replace_container(ls, "default/gpu", "main", cpu_ids=(1, 2, 3, 4))


def _other_gpu(st: Statuses, ls: Listed) -> tuple[Statuses, Listed]:
    gpu = DeviceAssignment("nvidia.com/gpu", ("GPU-1",), (0,))
    return st, _replace_container(ls, "default/gpu", "main", devices=(gpu,))


def _memory_elsewhere(st: Statuses, ls: Listed) -> tuple[Statuses, Listed]:
    blocks = tuple(
        dataclasses.replace(m, numa_ids=(1,)) if m.memory_type == "memory" else m
        for m in _gpu_main(ls).memory
    )
    return st, _replace_container(ls, "default/gpu", "main", memory=blocks)


def _side_not_listed(st: Statuses, ls: Listed) -> tuple[Statuses, Listed]:
    return st, tuple(p for p in ls if p.name != "side")


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(
            _admit_huge,
            [
                Difference(
                    "default/huge", None, "verdict", "rejected TopologyAffinityError", "admitted"
                )
            ],
            id="kubelet-admits",
        ),
        pytest.param(
            _reject_gpu,
            [Difference("default/gpu", None, "verdict", "admitted", "rejected OutOfcpu")],
            id="kubelet-rejects",
        ),
        pytest.param(
            _other_message,
            [Difference("default/odd", None, "message", SMT_MESSAGE, "other")],
            id="message",
        ),
        pytest.param(
            _other_cpus,
            [Difference("default/gpu", "main", "cpus", "1-2,9-10", "1-4")],
            id="cpus",
        ),
        pytest.param(
            _other_gpu,
            [
                Difference(
                    "default/gpu",
                    "main",
                    "devices",
                    "nvidia.com/gpu numa [0] ids ['GPU-0']",
                    "nvidia.com/gpu numa [0] ids ['GPU-1']",
                )
            ],
            id="device-id-on-the-same-numa-node",
        ),
        pytest.param(
            _memory_elsewhere,
            [Difference("default/gpu", "main", "memory", f"{GPU_MEMORY} [0]", f"{GPU_MEMORY} [1]")],
            id="memory-numa",
        ),
        pytest.param(
            _side_not_listed,
            [
                Difference("default/side", "main", "cpus", "5,13", "-"),
                Difference("default/side", "main", "memory", f"memory {GI} numa [1]", "-"),
                Difference("default/side", "proxy", "cpus", "4,12", "-"),
                Difference("default/side", "proxy", "memory", "memory 268435456 numa [1]", "-"),
            ],
            id="pod-missing-from-list",
        ),
    ],
)
def test_differences(tmp_path: Path, mutate: Any, expected: list[Difference]) -> None:
    statuses, listed = _agreeing_kubelet(tmp_path)
    statuses, listed = mutate(statuses, listed)
    simulated = simulated_verdicts(_profile(), _pods())
    real = real_verdicts(pods=_pods(), statuses=statuses, listed=listed, profile=_profile())
    assert list(compare(simulated, real)) == expected


def test_messages_can_be_left_out(tmp_path: Path) -> None:
    statuses, listed = _agreeing_kubelet(tmp_path)
    statuses["default/odd"] = {**statuses["default/odd"], "message": "other"}
    simulated = simulated_verdicts(_profile(), _pods())
    real = real_verdicts(pods=_pods(), statuses=statuses, listed=listed, profile=_profile())
    assert compare(simulated, real, messages=False) == ()


def test_device_ids_are_not_compared_without_numa_affinity() -> None:
    kubelet = {
        "topologyManagerPolicy": "none",
        "memoryManagerPolicy": "None",
        "reservedSystemCPUs": "0",
    }
    shape = {
        "numaNodes": 2,
        "coresPerNumaNode": 2,
        "memoryPerNumaNode": "1Gi",
        "devicesPerNumaNode": {"nvidia.com/gpu": 2},
    }
    (profile,) = parse_profiles(
        {"nodes": [{"name": "n", "kubelet": kubelet, "shape": shape}]}, source="p.yaml"
    )
    pods = [
        pod_from_manifest(
            _pod("g", [_container("c", "1", "1Gi", **{"nvidia.com/gpu": "1"})]), source="g"
        )
    ]
    (sim,) = simulated_verdicts(profile, pods)
    assert sim.containers[0].devices["nvidia.com/gpu"].ids is None
    used = sim.containers[0].devices["nvidia.com/gpu"].numa[0]
    other = "GPU-1" if used == 0 else "GPU-3"  # another device of the same NUMA node
    gpu = DeviceAssignment("nvidia.com/gpu", (other,), (used,))
    container = dataclasses.replace(_as_resources(sim), devices=(gpu,))
    listed = (PodResources("default", "g", (container,)),)
    real = real_verdicts(
        pods=pods, statuses={"default/g": {"phase": "Running"}}, listed=listed, profile=profile
    )
    assert compare((sim,), real) == ()


def _as_resources(v: Verdict) -> Any:
    from exporter.resources import ContainerResources

    c = v.containers[0]
    return ContainerResources(
        c.name, tuple(sorted(c.cpus)), (), tuple(MemoryBlock(t, s, n) for t, s, n in c.memory)
    )


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param({"phase": "Running"}, (True, None, None), id="running"),
        pytest.param({"phase": "Pending"}, (True, None, None), id="pending-admitted"),
        pytest.param({"phase": "Succeeded"}, (True, None, None), id="succeeded"),
        pytest.param(
            {"phase": "Failed", "reason": "TopologyAffinityError", "message": "m"},
            (False, "TopologyAffinityError", "m"),
            id="rejected",
        ),
        pytest.param({"phase": "Failed"}, (False, "Failed", None), id="failed-no-reason"),
        pytest.param(
            {"phase": "Failed", "reason": "OutOfcpu", "message": "Pod was rejected: Node didn't"},
            (False, "OutOfcpu", "Node didn't"),
            id="kubelet-prefix",
        ),
    ],
)
def test_verdict_from_status(
    status: dict[str, Any], expected: tuple[bool, str | None, str | None]
) -> None:
    assert verdict_from_status(status) == expected


def test_undecided_pod_is_an_error() -> None:
    with pytest.raises(ValueError, match="no kubelet verdict"):
        verdict_from_status({})
    pods = _pods()[:1]
    with pytest.raises(ValueError, match="pod default/gpu: no status"):
        real_verdicts(pods=pods, statuses={}, listed=(), profile=_profile())


def test_reproducer_carries_everything_to_replay() -> None:
    diff = Difference("default/gpu", "main", "cpus", "1-2,9-10", "1-4")
    text = reproducer(
        scenario="s1", profile_text=PROFILE_TEXT, node="smt", pods=MANIFESTS[:1], differences=[diff]
    )
    assert text.startswith("scenario s1: 1 difference(s), simulator vs kubelet\n")
    assert "  default/gpu container main: cpus: simulator 1-2,9-10 | kubelet 1-4\n" in text
    assert PROFILE_TEXT in text
    pods_part = text.split("# pods.yaml (bound in this order by spec.nodeName)\n")[1].split(
        "\n\n# replay"
    )[0]
    assert list(yaml.safe_load_all(pods_part)) == MANIFESTS[:1]
    assert "fakenrt kubelet explain --profile profile.yaml --node smt --pod pods.yaml" in text


@pytest.mark.parametrize(
    ("status", "decided"),
    [
        pytest.param({"phase": "Pending"}, False, id="not-seen-yet"),
        pytest.param(
            {"phase": "Pending", "conditions": [{"type": "PodScheduled"}]}, False, id="bound"
        ),
        pytest.param(
            {"phase": "Pending", "initContainerStatuses": [{"name": "setup"}]}, True, id="init-runs"
        ),
        pytest.param(
            {"phase": "Pending", "containerStatuses": [{"name": "c"}]}, True, id="starting"
        ),
        pytest.param({"phase": "Running"}, True, id="running"),
        pytest.param({"phase": "Failed", "reason": "OutOfcpu"}, True, id="rejected"),
    ],
)
def test_kubelet_decided(status: dict[str, Any], decided: bool) -> None:
    assert kubelet_decided(status) is decided


# -- ResourceClaims ---------------------------------------------------------------------


def _dra_inputs() -> tuple[NodeProfile, list[PodSpec], list[ResourceClaim]]:
    """The DRA scenario of the oracle, its claims allocated as a scheduler might."""
    scenario = next(s for s in dra_scenarios() if s.name == "dra-single-numa-node")
    profile, _ = scenario_inputs(scenario)
    manifests = [json.loads(json.dumps(m)) for m in scenario.pods]
    for m in manifests:
        m["metadata"]["uid"] = f"uid-{m['metadata']['name']}"
        for c in m["spec"].get("resourceClaims", []):
            if "resourceClaimTemplateName" in c:  # what the resourceclaim controller writes
                m.setdefault("status", {}).setdefault("resourceClaimStatuses", []).append(
                    {"name": c["name"], "resourceClaimName": f"{m['metadata']['name']}-gpu"}
                )
    allocated = {"far-gpu": ["gpu-3"], "near-gpu": ["gpu-0"], "two-gpus": ["gpu-1", "gpu-4"]}
    claims = []
    for name, devices in allocated.items():
        user = {"far-gpu": "far", "near-gpu": "near", "two-gpus": "two"}[name]
        claims.append(_allocated(name, user, devices, profile.name))
    claims.append(_allocated("mixed-gpu", "mixed", ["gpu-5"], profile.name, owner="uid-mixed"))
    pods = [pod_from_manifest(m, source=m["metadata"]["name"]) for m in manifests]
    return profile, pods, claims


def _allocated(
    name: str, pod: str, devices: list[str], pool: str, *, owner: str | None = None
) -> ResourceClaim:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"c-{name}"}
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "controller": True, "name": pod}]
    results = [
        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": pool, "device": d} for d in devices
    ]
    return claim_from_manifest(
        {
            "metadata": meta,
            "status": {
                "allocation": {"devices": {"results": results}},
                "reservedFor": [{"resource": "pods", "name": pod, "uid": f"uid-{pod}"}],
            },
        }
    )


def test_a_kubelet_that_prepares_claims_like_the_simulator_agrees(tmp_path: Path) -> None:
    profile, pods, claims = _dra_inputs()
    node = NodeState.from_profile(profile)
    by_name = {(c.namespace, c.name): c for c in claims}
    statuses: dict[str, dict[str, Any]] = {}
    for pod in pods:
        result = node.admit(pod)
        if result.admit:
            statuses[pod.key] = {"phase": "Running"}
            node.prepare(pod.key, lambda ns, n: by_name.get((ns, n)))
        else:
            statuses[pod.key] = {
                "phase": "Failed",
                "reason": result.reason,
                "message": result.message,
            }
    held = list(node.allocations().values())
    with PodResourcesServer(tmp_path / "kubelet.sock", _Source(profile, held)) as server:
        client = PodResourcesClient(server.socket_path, timeout_s=5)
        try:
            listed = client.list()
        finally:
            client.close()
        dynamic = list_dynamic(server.socket_path)
    simulated = simulated_verdicts(profile, pods, claims)
    real = real_verdicts(
        pods=pods, statuses=statuses, listed=listed, profile=profile, dynamic=dynamic
    )
    assert compare(simulated, real) == ()
    by_pod = {v.pod: v for v in simulated}
    assert [v.reason for v in simulated] == [None, None, None, None, "TopologyAffinityError", None]
    (far,) = by_pod["default/far"].containers[0].dynamic
    assert far.devices == (
        ("gpu.nvidia.com", profile.name, "gpu-3", ("k8s.gpu.nvidia.com/device=gpu-3",), None),
    )
    assert by_pod["default/waiting"].containers[0].dynamic == ()  # never allocated
    # far: CPUs on NUMA node 0, its GPU on 1; near: CPUs on 1, its GPU on 0; mixed: its
    # CPU and device-plugin GPU aligned on 0, its DRA GPU on 1
    assert misaligned_pods(real, profile) == ("default/far", "default/near", "default/mixed")
    # what the exporter's observed placement must show of them (gpu-0..2 on NUMA node 0,
    # gpu-3..5 on 1); "waiting" is admitted with no device prepared: not listed
    assert dra_zones(real, profile) == {
        "default/far": {1: {"gpu.nvidia.com": 1}},
        "default/near": {0: {"gpu.nvidia.com": 1}},
        "default/two": {0: {"gpu.nvidia.com": 1}, 1: {"gpu.nvidia.com": 1}},
        "default/mixed": {1: {"gpu.nvidia.com": 1}},
    }
    # the DRA field is compared for the 5 admitted pods' containers with claims
    assert compared_fields(simulated) == 6 * 2 + 5 * 4

    moved = dataclasses.replace(
        far, devices=((*far.devices[0][:2], "gpu-4", far.devices[0][3], None),)
    )
    other: Dynamic = {**dynamic, "default/far": {"c": (moved,)}}
    wrong = real_verdicts(
        pods=pods, statuses=statuses, listed=listed, profile=profile, dynamic=other
    )
    (difference,) = compare(simulated, wrong)
    assert (difference.pod, difference.container, difference.field) == (
        "default/far",
        "c",
        "dynamic",
    )
    assert "gpu-4" in difference.kubelet and "gpu-3" in difference.simulator
