"""Oracle scenarios: a profile node a real kubelet can run (docs/real-kubelet.md) and pods
to bind to it in order. A fixed set covering every Topology Manager policy, scope and
option, the CPU Manager options, SMT, hugepages, devices, init containers and sidecars;
DRA scenarios (ResourceClaims allocated by the real kube-scheduler and prepared by the
kubelet without any NUMA alignment); and seeded random ones. Pure: scenarios are plain
data (a profile file's text, Pod and ResourceClaim manifests), so a reproducer can print
them as they are.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from fakenrt.podspec import PodSpec, pod_from_manifest
from fakenrt.profiles import NodeProfile, parse_profiles

NAMESPACE = "default"
#: The pause image kubeadm v1.36.3 names (`kubeadm config images list`), which
#: kind/build-node-image.sh builds into the node image: the oracle's pods really run.
PAUSE = "registry.k8s.io/pause:3.10.2"
GPU = "example.com/gpu"


@dataclass(frozen=True)
class Scenario:
    name: str
    #: One profile node, as a profile file's ``nodes[0]`` mapping.
    node: Mapping[str, Any]
    #: Pod manifests in binding order (no ``spec.nodeName``: the runner sets it).
    pods: tuple[Mapping[str, Any], ...]
    #: ResourceClaims and ResourceClaimTemplates, created before the pods.
    claims: tuple[Mapping[str, Any], ...] = ()
    #: Pods the cluster's kube-scheduler places (pinned to the node by a node selector),
    #: so its DynamicResources plugin allocates their claims; the others are bound with
    #: ``spec.nodeName``, bypassing it (their claims stay unallocated).
    scheduled: frozenset[str] = frozenset()

    @property
    def node_name(self) -> str:
        return str(self.node["name"])

    @property
    def profile_text(self) -> str:
        return yaml.safe_dump({"nodes": [dict(self.node)]}, sort_keys=False)

    def in_namespace(self, namespace: str) -> Scenario:
        """The same scenario with its pods and claims in ``namespace`` (pods name their
        claims and templates without one, so the references stay whole): two workers
        run scenarios side by side, each in a namespace of its own."""

        def moved(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
            return {**manifest, "metadata": {**manifest["metadata"], "namespace": namespace}}

        return Scenario(
            name=self.name,
            node=self.node,
            pods=tuple(moved(p) for p in self.pods),
            claims=tuple(moved(c) for c in self.claims),
            scheduled=self.scheduled,
        )


# -- building blocks -------------------------------------------------------------------


def _container(
    name: str,
    cpu: str,
    memory: str,
    *,
    guaranteed: bool = True,
    extra: Mapping[str, str] | None = None,
    restart_always: bool = False,
) -> dict[str, Any]:
    amounts = {"cpu": cpu, "memory": memory, **(extra or {})}
    resources: dict[str, Any] = {"requests": amounts}
    if guaranteed:
        resources["limits"] = dict(amounts)
    out: dict[str, Any] = {"name": name, "image": PAUSE, "resources": resources}
    if restart_always:
        out["restartPolicy"] = "Always"
    return out


def pod(
    name: str,
    containers: Sequence[Mapping[str, Any]],
    init: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A Pod manifest of pause containers (``restartPolicy: Never``: a rejected pod stays
    ``Failed``; a plain init container's pause never exits, which does not matter - the
    kubelet has admitted the pod and allocated every container by then)."""
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [dict(c) for c in containers],
    }
    if init:
        spec["initContainers"] = [dict(c) for c in init]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def _node(
    name: str,
    *,
    kubelet: Mapping[str, Any],
    numa: int = 2,
    cores: int = 6,
    threads: int = 1,
    memory: str = "4Gi",
    per_socket: int = 1,
    hugepages: str | None = None,
    gpus: int = 0,
    uncore: int | None = None,
) -> dict[str, Any]:
    """A shape node; the reservations a real kubelet needs are filled in: the first core
    (all its threads) reserved, and with the Static Memory Manager 256Mi of
    ``systemReserved`` memory reserved on NUMA node 0."""
    cfg = dict(kubelet)
    if cfg.get("cpuManagerPolicy", "static") == "static" and "reservedSystemCPUs" not in cfg:
        total = numa * cores
        cfg["reservedSystemCPUs"] = ",".join(str(t * total) for t in range(threads))
    if cfg.get("memoryManagerPolicy", "Static") == "Static":
        cfg.setdefault("systemReserved", {"memory": "256Mi"})
        cfg.setdefault("reservedMemory", [{"numaNode": 0, "limits": {"memory": "256Mi"}}])
    shape: dict[str, Any] = {
        "numaNodes": numa,
        "coresPerNumaNode": cores,
        "threadsPerCore": threads,
        "numaNodesPerSocket": per_socket,
        "memoryPerNumaNode": memory,
    }
    if hugepages:
        shape["hugepagesPerNumaNode"] = {"hugepages-2Mi": hugepages}
    if gpus:
        shape["devicesPerNumaNode"] = {GPU: gpus}
    if uncore:
        shape["coresPerUncoreCache"] = uncore
    return {"name": name, "kubelet": cfg, "shape": shape}


def _g(name: str, cpu: str, memory: str = "256Mi", **extra: str) -> dict[str, Any]:
    return _container(name, cpu, memory, extra=extra or None)


# -- the fixed set -----------------------------------------------------------------------


def fixed_scenarios() -> tuple[Scenario, ...]:
    """The fixed scenario set (names are unique and stable)."""
    fill = [pod(f"p{i}", [_g("c", "3")]) for i in range(4)]
    spread = [
        pod("wide", [_g("c", "6", "1Gi")]),
        pod("small", [_g("c", "1")]),
        pod("burst", [_container("c", "500m", "128Mi", guaranteed=False)]),
    ]
    gpu_pods = [
        pod("g2", [_g("c", "2", "512Mi", **{GPU: "2"})]),
        pod("g1", [_g("c", "1", "256Mi", **{GPU: "1"})]),
        pod("g3", [_g("c", "2", "256Mi", **{GPU: "3"})]),
        pod("g1b", [_g("c", "1", "256Mi", **{GPU: "1"})]),
    ]
    init_pods = [
        pod(
            "init",
            [_g("main", "2")],
            init=[_g("setup", "4"), _container("proxy", "1", "128Mi", restart_always=True)],
        ),
        pod("after", [_g("c", "3")]),
        pod("two", [_g("a", "2"), _g("b", "2")]),
    ]
    huge_pods = [
        pod("h1", [_g("c", "2", "512Mi", **{"hugepages-2Mi": "64Mi"})]),
        pod("h2", [_g("c", "1", "256Mi", **{"hugepages-2Mi": "96Mi"})]),
        pod("h3", [_g("c", "1", "1Gi", **{"hugepages-2Mi": "128Mi"})]),
    ]
    smt_pods = [
        pod("even", [_g("c", "2")]),
        pod("odd", [_g("c", "3")]),
        pod("four", [_g("c", "4")]),
        pod("big", [_g("c", "8")]),
    ]
    out = [
        Scenario(
            "none-policy",
            _node("none-policy", kubelet={"topologyManagerPolicy": "none"}, gpus=2),
            (*spread, *gpu_pods[:2]),
        ),
        Scenario(
            "best-effort",
            _node("best-effort", kubelet={"topologyManagerPolicy": "best-effort"}, gpus=2),
            (*spread, *gpu_pods, *fill[:2]),
        ),
        Scenario(
            "restricted",
            _node("restricted", kubelet={"topologyManagerPolicy": "restricted"}, gpus=2),
            (*gpu_pods, *fill),
        ),
        Scenario(
            "single-numa-node",
            _node(
                "single-numa-node", kubelet={"topologyManagerPolicy": "single-numa-node"}, gpus=2
            ),
            (*gpu_pods, *fill),
        ),
        Scenario(
            "pod-scope",
            _node(
                "pod-scope",
                kubelet={
                    "topologyManagerPolicy": "single-numa-node",
                    "topologyManagerScope": "pod",
                },
                gpus=2,
            ),
            (*init_pods, *gpu_pods[:2], *fill[:2]),
        ),
        Scenario(
            "init-sidecar-container-scope",
            _node("init-sidecar", kubelet={"topologyManagerPolicy": "restricted"}),
            (*init_pods, *fill[:2]),
        ),
        Scenario(
            "smt-full-pcpus-only",
            _node(
                "smt-full-pcpus",
                kubelet={
                    "topologyManagerPolicy": "single-numa-node",
                    "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
                },
                threads=2,
            ),
            tuple(smt_pods),
        ),
        Scenario(
            "smt-distribute-across-numa",
            _node(
                "smt-distribute",
                kubelet={
                    "topologyManagerPolicy": "best-effort",
                    "cpuManagerPolicyOptions": {
                        "full-pcpus-only": "true",
                        "distribute-cpus-across-numa": "true",
                    },
                },
                threads=2,
            ),
            (pod("wide", [_g("c", "10")]), *smt_pods[:1], pod("wider", [_g("c", "4")])),
        ),
        Scenario(
            "hugepages-static-memory",
            _node(
                "hugepages",
                kubelet={"topologyManagerPolicy": "single-numa-node"},
                hugepages="128Mi",
                memory="2Gi",
            ),
            (*huge_pods, pod("mem", [_g("c", "1", "1536Mi")]), pod("mem2", [_g("c", "1", "2Gi")])),
        ),
        Scenario(
            "closest-numa-4-nodes",
            _node(
                "closest-numa",
                kubelet={
                    "topologyManagerPolicy": "restricted",
                    "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": "true"},
                    "memoryManagerPolicy": "None",
                },
                numa=4,
                cores=2,
            )
            | {"shape": _distances_shape(4, 2)},
            (pod("a", [_g("c", "3")]), pod("b", [_g("c", "2")]), pod("c", [_g("c", "3")])),
        ),
        Scenario(
            "align-by-socket",
            _node(
                "align-by-socket",
                kubelet={
                    "topologyManagerPolicy": "restricted",
                    "featureGates": {"CPUManagerPolicyAlphaOptions": True},
                    "cpuManagerPolicyOptions": {"align-by-socket": "true"},
                    "memoryManagerPolicy": "None",
                },
                numa=4,
                cores=2,
                per_socket=2,
            ),
            (pod("a", [_g("c", "3")]), pod("b", [_g("c", "3")]), pod("c", [_g("c", "1")])),
        ),
        Scenario(
            "distribute-across-cores",
            _node(
                "across-cores",
                kubelet={
                    "topologyManagerPolicy": "none",
                    "featureGates": {"CPUManagerPolicyAlphaOptions": True},
                    "cpuManagerPolicyOptions": {"distribute-cpus-across-cores": "true"},
                    "memoryManagerPolicy": "None",
                },
                threads=2,
            ),
            (pod("a", [_g("c", "3")]), pod("b", [_g("c", "2")])),
        ),
        Scenario(
            "uncore-cache-strict-reservation",
            _node(
                "uncore",
                kubelet={
                    "topologyManagerPolicy": "none",
                    "cpuManagerPolicyOptions": {
                        "prefer-align-cpus-by-uncorecache": "true",
                        "strict-cpu-reservation": "true",
                    },
                    "memoryManagerPolicy": "None",
                },
                numa=1,
                cores=8,
                uncore=2,
            ),
            (pod("a", [_g("c", "2")]), pod("b", [_g("c", "3")]), pod("c", [_g("c", "2")])),
        ),
    ]
    return tuple(out)


def _distances_shape(numa: int, cores: int) -> dict[str, Any]:
    rows = [
        [10 if a == b else (12 if a // 2 == b // 2 else 30) for b in range(numa)]
        for a in range(numa)
    ]
    return {
        "numaNodes": numa,
        "coresPerNumaNode": cores,
        "threadsPerCore": 1,
        "numaNodesPerSocket": 1,
        "memoryPerNumaNode": "4Gi",
        "distances": rows,
    }


# -- DRA scenarios -----------------------------------------------------------------------

NVIDIA = "gpu.nvidia.com"
AMD = "gpu.amd.com"
CPU_CLASS = "dra.cpu"


def _request(
    name: str,
    device_class: str,
    *,
    numa: int | None = None,
    count: int | None = None,
    cpus: int | None = None,
    numa_attribute: str = "resource.kubernetes.io",
    numa_name: str = "numaNode",
) -> dict[str, Any]:
    """One request of a claim: ``numa`` pins it with a CEL selector, ``count`` asks for
    several devices, ``cpus`` consumes the CPU driver's capacity."""
    exactly: dict[str, Any] = {"deviceClassName": device_class}
    if numa is not None:
        expression = f'device.attributes["{numa_attribute}"].{numa_name} == {numa}'
        exactly["selectors"] = [{"cel": {"expression": expression}}]
    if count is not None:
        exactly |= {"allocationMode": "ExactCount", "count": count}
    if cpus is not None:
        exactly["capacity"] = {"requests": {"dra.cpu/cpu": str(cpus)}}
    return {"name": name, "exactly": exactly}


def claim(
    name: str,
    *requests: Mapping[str, Any],
    match: str | None = None,
    template: bool = False,
) -> dict[str, Any]:
    """A ResourceClaim (or, with ``template``, a ResourceClaimTemplate) of ``requests``;
    ``match`` adds a ``matchAttribute`` constraint over all of them."""
    devices: dict[str, Any] = {"requests": [dict(r) for r in requests]}
    if match is not None:
        devices["constraints"] = [
            {"requests": [r["name"] for r in requests], "matchAttribute": match}
        ]
    spec: dict[str, Any] = {"devices": devices}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate" if template else "ResourceClaim",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"spec": spec} if template else spec,
    }


def claiming(
    name: str,
    cpu: str | None,
    claims: Mapping[str, str],
    *,
    memory: str = "256Mi",
    templates: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A one-container pod using ``claims`` (pod claim name -> ResourceClaim) and
    ``templates`` (pod claim name -> ResourceClaimTemplate): Guaranteed with ``cpu``
    exclusive CPUs, or Burstable (100m) when ``cpu`` is None."""
    container = (
        _container("c", cpu, memory, extra=extra)
        if cpu is not None
        else _container("c", "100m", "64Mi", guaranteed=False)
    )
    pod_claims = [{"name": k, "resourceClaimName": v} for k, v in claims.items()]
    pod_claims += [
        {"name": k, "resourceClaimTemplateName": v} for k, v in (templates or {}).items()
    ]
    container["resources"]["claims"] = [{"name": c["name"]} for c in pod_claims]
    out = pod(name, [container])
    out["spec"]["resourceClaims"] = pod_claims
    return out


def _dra_node(
    name: str,
    *,
    kubelet: Mapping[str, Any],
    gpus: Mapping[str, int],
    cpu_driver: bool = False,
    devices: int = 0,
    cores: int = 4,
) -> dict[str, Any]:
    node = _node(name, kubelet=kubelet, cores=cores, gpus=devices)
    node["shape"]["draDevicesPerNumaNode"] = dict(gpus)
    if cpu_driver:
        node["dra"] = {"cpu": {}}
    return node


def dra_scenarios() -> tuple[Scenario, ...]:
    """DRA GPUs (and CPUs) beside exclusive CPUs and memory: claims allocated by the real
    kube-scheduler - selectors, counts, templates, consumable CPU capacity and
    ``matchAttribute`` constraints - then prepared by the kubelet after admission, never
    aligned by its Topology Manager; claims never allocated leave the pod Pending."""
    single = Scenario(
        "dra-single-numa-node",
        _dra_node(
            "dra-single-numa",
            kubelet={"topologyManagerPolicy": "single-numa-node"},
            gpus={NVIDIA: 3},
            devices=1,
            cores=5,
        ),
        (
            # 2 CPUs on NUMA node 0 (CPU 0 reserved), the GPU pinned to NUMA node 1
            claiming("far", "2", {"gpu": "far-gpu"}),
            # 3 CPUs: NUMA node 0 has two left, so NUMA node 1; the GPU on node 0
            claiming("near", "3", {"gpu": "near-gpu"}),
            # no exclusive CPUs: two GPUs, never misaligned
            claiming("two", None, {"gpus": "two-gpus"}),
            # a device-plugin GPU aligned with its CPU, a DRA GPU from a template
            claiming("mixed", "1", {}, templates={"gpu": "one-gpu"}, extra={GPU: "1"}),
            # bound past the scheduler: 4 CPUs fit no NUMA node - refused before the
            # claim (never allocated) matters
            claiming("too-wide", "4", {"gpu": "never-a"}),
            # bound past the scheduler: admitted, its claim never allocated: Pending
            claiming("waiting", "1", {"gpu": "never-b"}),
        ),
        claims=(
            claim("far-gpu", _request("gpu", NVIDIA, numa=1)),
            claim("near-gpu", _request("gpu", NVIDIA, numa=0)),
            claim("two-gpus", _request("gpus", NVIDIA, count=2)),
            claim("one-gpu", _request("gpu", NVIDIA), template=True),
            claim("never-a", _request("gpu", NVIDIA)),
            claim("never-b", _request("gpu", NVIDIA)),
        ),
        scheduled=frozenset({"far", "near", "two", "mixed"}),
    )
    cpus = Scenario(
        "dra-cpu-claims",
        _dra_node(
            "dra-cpu-claims",
            kubelet={
                "topologyManagerPolicy": "none",
                "cpuManagerPolicy": "none",
                "memoryManagerPolicy": "None",
            },
            gpus={NVIDIA: 2},
            cpu_driver=True,
        ),
        (
            # first, so the GPUs of NUMA node 0 are not both taken before it
            claiming("split", None, {"both": "split"}),
            claiming("aligned", None, {"both": "aligned"}),
            claiming("aligned2", None, {"both": "aligned2"}),
        ),
        claims=(
            claim(
                "aligned",
                _request("gpu", NVIDIA),
                _request("cpus", CPU_CLASS, cpus=2),
                match="resource.kubernetes.io/numaNode",
            ),
            claim(
                "aligned2",
                _request("gpu", NVIDIA),
                _request("cpus", CPU_CLASS, cpus=2),
                match="resource.kubernetes.io/numaNode",
            ),
            # no constraint, selectors on different NUMA nodes: CPUs and GPU apart
            claim(
                "split",
                _request("gpu", NVIDIA, numa=0),
                _request("cpus", CPU_CLASS, cpus=1, numa=1),
            ),
        ),
        scheduled=frozenset({"aligned", "aligned2", "split"}),
    )
    amd = Scenario(
        "dra-amd-own-numa-attribute",
        _dra_node(
            "dra-amd",
            kubelet={"topologyManagerPolicy": "restricted"},
            gpus={AMD: 2},
        ),
        (
            # first: it needs a GPU of NUMA node 0, the pair then takes NUMA node 1's
            claiming("single", "1", {"gpu": "single"}),
            claiming("pair", "2", {}, templates={"gpus": "pair"}),
        ),
        claims=(
            # AMD publishes its NUMA node as its own attribute only
            claim(
                "pair",
                _request("a", AMD),
                _request("b", AMD),
                match="gpu.amd.com/numaNode",
                template=True,
            ),
            claim("single", _request("gpu", AMD, numa=0, numa_attribute=AMD)),
        ),
        scheduled=frozenset({"pair", "single"}),
    )
    return (single, cpus, amd)


# -- random scenarios --------------------------------------------------------------------

_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")


def random_scenario(seed: int, index: int) -> Scenario:
    """The ``index``-th scenario of ``seed``: the same arguments give the same scenario."""
    rng = random.Random(f"{seed}/{index}")
    numa = rng.choice((1, 2, 2, 4))
    cores = rng.choice((2, 3, 4))
    threads = rng.choice((1, 2))
    policy = rng.choice(_POLICIES)
    kubelet: dict[str, Any] = {
        "topologyManagerPolicy": policy,
        "topologyManagerScope": rng.choice(("container", "pod")),
        "memoryManagerPolicy": rng.choice(("Static", "None")),
    }
    options: dict[str, str] = {}
    if threads == 2 and rng.random() < 0.4:
        options["full-pcpus-only"] = "true"
    if numa > 1 and rng.random() < 0.3:
        options["distribute-cpus-across-numa"] = "true"
    if options:
        kubelet["cpuManagerPolicyOptions"] = options
    if numa > 2 and rng.random() < 0.3:
        kubelet["topologyManagerPolicyOptions"] = {"prefer-closest-numa-nodes": "true"}
    hugepages = rng.random() < 0.3
    gpus = rng.choice((0, 0, 1, 2))
    name = f"random-{seed}-{index}"
    node = _node(
        name,
        kubelet=kubelet,
        numa=numa,
        cores=cores,
        threads=threads,
        memory=rng.choice(("1Gi", "2Gi")),
        hugepages="64Mi" if hugepages else None,
        gpus=gpus,
    )
    pods = []
    for p in range(rng.randint(3, 7)):
        containers = []
        for c in range(rng.choice((1, 1, 2))):
            extra: dict[str, str] = {}
            if gpus and rng.random() < 0.4:
                extra[GPU] = str(rng.randint(1, gpus + 1))
            if hugepages and rng.random() < 0.4:
                extra["hugepages-2Mi"] = rng.choice(("16Mi", "32Mi", "64Mi"))
            if rng.random() < 0.15:
                containers.append(_container(f"c{c}", "250m", "64Mi", guaranteed=False))
                continue
            cpu = str(rng.randint(1, max(1, cores * threads)))
            memory = rng.choice(("128Mi", "256Mi", "512Mi", "1Gi"))
            containers.append(_container(f"c{c}", cpu, memory, extra=extra or None))
        init: list[dict[str, Any]] = []
        if rng.random() < 0.2:
            init.append(_g("init", str(rng.randint(1, cores)), "128Mi"))
        if rng.random() < 0.15:
            init.append(_container("side", "1", "64Mi", restart_always=True))
        pods.append(pod(f"p{p}", containers, init=init))
    return Scenario(name, node, tuple(pods))


def random_scenarios(count: int, seed: int) -> tuple[Scenario, ...]:
    return tuple(random_scenario(seed, i) for i in range(count))


def scenario_inputs(scenario: Scenario) -> tuple[NodeProfile, list[PodSpec]]:
    """The scenario's profile node and pods, parsed as ``fakenrt kubelet explain`` would.
    Raises ProfileError / PodSpecError naming the scenario."""
    (profile,) = parse_profiles({"nodes": [dict(scenario.node)]}, source=scenario.name)
    pods = [
        pod_from_manifest(m, source=f"{scenario.name}: pod {m['metadata']['name']}")
        for m in scenario.pods
    ]
    return profile, pods
