"""The DRA mode of ``fakenrt simulate`` (``--dra``, ``settings.dra``): GPU requests served
through Dynamic Resource Allocation on the nodes whose GPUs are DRA devices, and which
pods ran misaligned. Pure.

How a GPU request becomes a ResourceClaim (docs/simulate.md, "DRA mode"):

* **Which nodes.** A node serves the workload's ``nvidia.com/gpu`` through DRA when its
  profile has a DRA driver whose DeviceClass is ``gpu.nvidia.com`` (the NVIDIA driver's,
  docs/profiles.md) and no device-plugin ``nvidia.com/gpu``. That is the rule of the
  DRAExtendedResource feature (KEP-5004): a DeviceClass with ``extendedResourceName:
  nvidia.com/gpu`` backs the extended resource on nodes where no device plugin advertises
  it, so the same pod runs through the device plugin on one node and through DRA on
  another. The pods keep asking ``nvidia.com/gpu``; the scheduler's whole-node fit counts
  the class's devices on such a node (:meth:`DraGpus.count_in`).
* **The scheduler's NUMA view.** NRT lists no DRA devices, so the NUMA plugin aligns only
  what NRT reports (CPUs, memory): no strategy sees where a DRA GPU sits.
* **Allocation, at bind.** Per container asking GPUs, one ResourceClaim of one request for
  that many devices of the class, without constraints, reserved for the pod and owned by
  it. The stock allocator (``k8s.io/dynamic-resource-allocation/structured/internal/
  stable/allocator_stable.go``, ``allocateOne``) walks the pool's slices and their devices
  in order and takes the first device no other claim holds: here the driver's devices in
  the profile's order (the order :func:`fakenrt.dra.slices.resource_slices` publishes),
  the first free ones. Devices are free again when the pod terminates.
* **The kubelet.** The pod reaches the simulated kubelet with its GPU requests replaced by
  the claims (the kubelet's device manager leaves a DRA-backed extended resource to the
  DRA manager), so the Topology Manager aligns its CPUs and memory and the DRA manager
  prepares the GPUs after admission, aligned with nothing (:mod:`fakenrt.kubelet.dra`).
* **Misaligned.** When the pod turns Running, its allocation on the kubelet is judged by
  the exporter's rule (:mod:`exporter.dra_alignment`, through
  :func:`fakenrt.kubelet.explain_dra.outcome`): a pod is misaligned when a container's DRA
  GPU lies on none of the NUMA nodes of its exclusive CPUs and Memory Manager memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from fakenrt.dra.slices import API_VERSION
from fakenrt.kubelet.allocation import PodAllocation
from fakenrt.kubelet.explain_dra import outcome
from fakenrt.podspec import ContainerSpec, PodSpec
from fakenrt.profiles.model import DraDriver, NodeProfile
from fakenrt.simulate.workload import GPU

#: The DeviceClass whose ``extendedResourceName`` is the workload's GPU resource.
GPU_DEVICE_CLASS = "gpu.nvidia.com"
#: The request of every claim the mode makes.
REQUEST = "gpu"
_CONTAINER_LISTS = ("initContainers", "containers")


class DraModeError(ValueError):
    """The DRA mode cannot run on these nodes."""


def gpu_driver(profile: NodeProfile) -> DraDriver | None:
    """The driver serving the workload's GPUs through DRA on this node, or None (no such
    driver, or a device plugin advertises the GPUs, which then take precedence)."""
    if profile.devices.get(GPU) is not None or any(GPU in z.devices for z in profile.zones):
        return None
    for driver in profile.dra:
        if not driver.cpu and driver.device_class == GPU_DEVICE_CLASS and driver.devices:
            return driver
    return None


def check_nodes(profiles: Iterable[NodeProfile]) -> None:
    """Raise :class:`DraModeError` when no node serves GPUs through DRA."""
    if not any(gpu_driver(p) is not None for p in profiles):
        raise DraModeError(
            f"dra: no node of the scenario has DRA GPUs (a DRA driver of DeviceClass "
            f"{GPU_DEVICE_CLASS} and no device-plugin {GPU}; docs/profiles.md, DRA devices)"
        )


#: The kube-scheduler's DynamicResources filter's message when no allocation exists.
CANNOT_ALLOCATE = "cannot allocate all claims"


def _strip(container: ContainerSpec) -> ContainerSpec:
    if GPU not in container.requests and GPU not in container.limits:
        return container
    return replace(
        container,
        requests={k: v for k, v in container.requests.items() if k != GPU},
        limits={k: v for k, v in container.limits.items() if k != GPU},
    )


def admission_spec(spec: PodSpec) -> PodSpec:
    """The pod as the kubelet of a DRA GPU node admits it: without its GPU requests (its
    claims are prepared after admission, outside the Topology Manager)."""
    return replace(
        spec,
        init_containers=tuple(map(_strip, spec.init_containers)),
        containers=tuple(map(_strip, spec.containers)),
    )


def too_few(gpus: int, driver: DraDriver) -> str | None:
    """Why no claim of ``gpus`` devices can be allocated on an empty node with ``driver``,
    or None."""
    if gpus <= len(driver.devices):
        return None
    return (
        f"{CANNOT_ALLOCATE}: {gpus} devices of DeviceClass {GPU_DEVICE_CLASS} asked, the "
        f"node has {len(driver.devices)}"
    )


@dataclass
class DraGpus:
    """The DRA GPUs of a run: which devices each pod's claims hold, per node, and how many
    pods ran with them and misaligned."""

    profiles: Mapping[str, NodeProfile]
    drivers: dict[str, DraDriver] = field(init=False)
    #: node -> pod key -> the devices its claims hold (allocation order).
    held: dict[str, dict[str, tuple[str, ...]]] = field(init=False)
    #: Claims of terminated pods, deleted from the API at the next bind (after the pod).
    gone: list[dict[str, Any]] = field(default_factory=list)
    #: Pod objects that turned Running holding DRA GPUs, and those of them misaligned.
    ran: int = 0
    misaligned: int = 0
    _claims: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.drivers = {}
        for name, profile in self.profiles.items():
            driver = gpu_driver(profile)
            if driver is not None:
                self.drivers[name] = driver
        self.held = {name: {} for name in self.drivers}

    def count_in(self, allocatable: Mapping[str, dict[str, Decimal]]) -> None:
        """Set each DRA GPU node's ``nvidia.com/gpu`` in the scheduler's allocatable."""
        for node, driver in self.drivers.items():
            allocatable[node][GPU] = Decimal(len(driver.devices))

    def free(self, node: str) -> list[str]:
        """The node's free DRA GPUs, in the order the allocator visits them."""
        used = {d for devices in self.held[node].values() for d in devices}
        return [d.name for d in self.drivers[node].devices if d.name not in used]

    def bind(
        self, manifest: Mapping[str, Any], node: str
    ) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
        """The pod as its kubelet gets it, and the claim watch events to apply before it:
        the claims of pods terminated since are ``DELETED``, the pod's own ResourceClaims
        ``ADDED`` (none on a node without DRA GPUs or for a pod without GPUs). Raises
        :class:`DraModeError` when the node has too few free devices (the scheduler's
        whole-node fit counts them, so a run never gets there)."""
        events = [("DELETED", claim) for claim in self.gone]
        self.gone = []
        driver = self.drivers.get(node)
        if driver is None:
            return dict(manifest), events
        meta = manifest["metadata"]
        pod, namespace, uid = meta["name"], meta.get("namespace") or "default", meta["uid"]
        spec = dict(manifest["spec"])
        free = self.free(node)
        claims: list[dict[str, Any]] = []
        pod_claims: list[dict[str, Any]] = []
        taken: list[str] = []
        for kind in _CONTAINER_LISTS:
            if kind not in spec:
                continue
            containers = []
            for container in spec[kind]:
                count, stripped = _without_gpus(container)
                if count == 0:
                    containers.append(container)
                    continue
                if count > len(free):
                    raise DraModeError(
                        f"pod {namespace}/{pod} on node {node}: {count} DRA GPUs asked, "
                        f"{len(free)} free"
                    )
                devices, free = free[:count], free[count:]
                taken += devices
                name = f"{pod}-{container['name']}-gpu"
                claims.append(
                    _claim(namespace, name, pod=pod, uid=uid, driver=driver, devices=devices)
                )
                ref = f"gpu-{container['name']}"
                pod_claims.append({"name": ref, "resourceClaimName": name})
                resources = dict(stripped.get("resources") or {})
                resources["claims"] = [*resources.get("claims", ()), {"name": ref}]
                containers.append({**stripped, "resources": resources})
            spec[kind] = containers
        if not claims:
            return dict(manifest), events
        spec["resourceClaims"] = [*spec.get("resourceClaims", ()), *pod_claims]
        key = f"{namespace}/{pod}"
        self.held[node][key] = tuple(taken)
        self._claims[key] = claims
        return {**manifest, "spec": spec}, events + [("ADDED", claim) for claim in claims]

    def started(self, node: str, key: str, allocation: PodAllocation | None) -> None:
        """The pod turned Running with ``allocation`` on its kubelet: count it when it
        holds DRA GPUs, and as misaligned by the exporter's rule."""
        if allocation is None or key not in self.held.get(node, {}):
            return
        self.ran += 1
        if outcome(self.profiles[node], allocation, None).misaligned:
            self.misaligned += 1

    def released(self, node: str, key: str) -> None:
        """The pod terminated: its devices are free; its claims go after it."""
        if self.held.get(node, {}).pop(key, None) is not None:
            self.gone += self._claims.pop(key, [])

    def figures(self) -> dict[str, Any]:
        """The run's DRA figures (``--json`` keys)."""
        share = round(self.misaligned / self.ran, 4) if self.ran else 0.0
        return {"dra_pods": self.ran, "misaligned": self.misaligned, "misaligned_share": share}


def _without_gpus(container: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
    """The container's GPU count and the container without its GPU requests."""
    resources = dict(container.get("resources") or {})
    count = 0
    for part in ("limits", "requests"):
        amounts = dict(resources.get(part) or {})
        if GPU in amounts:
            count = max(count, int(str(amounts.pop(GPU))))
            resources[part] = amounts
    return count, {**container, "resources": resources}


def _claim(
    namespace: str, name: str, *, pod: str, uid: str, driver: DraDriver, devices: list[str]
) -> dict[str, Any]:
    """An allocated ResourceClaim reserved for and owned by the pod."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"{uid}-{name}",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid, "controller": True}
            ],
        },
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": REQUEST,
                        "exactly": {
                            "deviceClassName": GPU_DEVICE_CLASS,
                            "allocationMode": "ExactCount",
                            "count": len(devices),
                        },
                    }
                ]
            }
        },
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": REQUEST,
                            "driver": driver.name,
                            "pool": driver.pool,
                            "device": d,
                        }
                        for d in devices
                    ]
                }
            },
            "reservedFor": [{"resource": "pods", "name": pod, "uid": uid}],
        },
    }
