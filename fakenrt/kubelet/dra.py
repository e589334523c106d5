"""The kubelet's DRA manager: preparing a pod's ResourceClaims, and what podresources
reports of them. Pure.

What the kubelet v1.36 does (``pkg/kubelet/cm/dra/manager.go``, ``claiminfo.go``,
``pkg/kubelet/cm/container_manager_linux.go``), and so the simulator:

* Claims are prepared **after admission**, when the pod is synced and before its sandbox
  is created (``kuberuntime_manager.go`` ``SyncPod`` calls ``PrepareDynamicResources``).
  The DRA manager is no Topology Manager hint provider - only the device, CPU and Memory
  Managers are registered (``container_manager_linux.go``, ``AddHintProvider``) - so a
  claim's devices never take part in NUMA alignment: a pod's exclusive CPUs and memory can
  sit on one NUMA node and its DRA devices on another, with no TopologyAffinityError.
* Preparing first validates every claim of the pod without changing anything: its name
  (``resourceclaim.Name``: a template's claim must be in ``status.resourceClaimStatuses``),
  that it exists, that the pod owns a template's claim (``IsForPod``), that the claim is
  reserved for the pod (``IsReservedForPod``), that it is allocated, and that every driver
  of its results is registered. Any failure fails the whole pod; nothing is cached.
* Then each claim is cached with a reference to the pod, and each driver's claims are
  sent to its kubelet plugin (``NodePrepareResources``); a claim's devices are recorded
  when its driver prepared it. A driver's failure fails the pod but leaves the claims
  cached (not prepared), and the next attempt calls the driver again. A claim already
  prepared for another pod is only referenced.
* A failure leaves the pod Pending: the kubelet records a Warning event
  ``FailedPrepareDynamicResources`` ("Failed to prepare dynamic resources: prepare
  dynamic resources: <error>") and retries the pod's sync with backoff; its exclusive
  CPUs, memory and device-plugin devices stay allocated meanwhile.
* When a pod is gone, its claims lose its reference; a claim no pod references is
  unprepared (``NodeUnprepareResources``) and dropped.
* podresources' ``dynamic_resources`` of a container (``GetDynamicResources``): for each of
  the pod's claims the container uses (``resources.claims``), in ``spec.resourceClaims``
  order, the cached claim with, per driver, one entry per prepared device - whose
  ``cdi_devices`` accumulate those of the driver's earlier devices of the claim (the
  kubelet appends to one slice per driver). A claim cached but not prepared lists no
  devices. When one of the container's claims is not cached at all, the container reports
  none (``GetContainerClaimInfos`` fails). Drivers come in name order (the kubelet
  iterates a map).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from fakenrt.dra.claims import ResourceClaim
from fakenrt.dra.driver import PreparedDevice, PrepareError, prepare_claim
from fakenrt.kubelet.allocation import ClaimResource, DynamicResource
from fakenrt.podspec import ContainerSpec, PodSpec
from fakenrt.profiles.model import DraDriver

#: The Warning event reason of a pod whose claims could not be prepared
#: (``pkg/kubelet/events/event.go``).
FAILED_PREPARE = "FailedPrepareDynamicResources"

ClaimLookup = Callable[[str, str], ResourceClaim | None]


@dataclass(frozen=True)
class ClaimInfo:
    """A claim in the DRA manager's cache (``state.ClaimInfoState`` and ``prepared``)."""

    namespace: str
    name: str
    uid: str
    drivers: tuple[str, ...]
    #: The pods referencing it, by uid (by ``namespace/name`` for pods without uid).
    pods: frozenset[str] = frozenset()
    devices: Mapping[str, tuple[PreparedDevice, ...]] = field(default_factory=dict)
    prepared: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class ClaimProblem(Exception):
    """Why a pod's claims cannot be prepared now (the kubelet's error text)."""


def _pod_ref(pod: PodSpec) -> str:
    return pod.uid or pod.key


def claim_names(pod: PodSpec) -> list[tuple[str, str | None]]:
    """(pod claim name, claim name or None when no claim is needed) for every pod claim,
    as ``resourceclaim.Name``; raises :class:`ClaimProblem` for a template's claim not
    created yet."""
    out: list[tuple[str, str | None]] = []
    for claim in pod.resource_claims:
        if claim.claim_name is not None:
            out.append((claim.name, claim.claim_name))
        elif claim.name in pod.claim_statuses:
            out.append((claim.name, pod.claim_statuses[claim.name]))
        else:
            raise ClaimProblem(f'pod "{pod.key}": ResourceClaim not created yet')
    return out


def _reserved(pod: PodSpec, claim: ResourceClaim) -> bool:
    if pod.uid:
        return pod.uid in claim.reserved_for
    return pod.name in claim.reserved_names  # a pod from a file, without uid


class DraManager:
    """One node's DRA manager: the claim cache. Copy before a speculative change."""

    def __init__(
        self,
        node: str,
        drivers: Mapping[str, DraDriver],
        claims: Mapping[str, ClaimInfo] | None = None,
    ) -> None:
        self.node = node
        self.drivers = drivers
        self.claims: dict[str, ClaimInfo] = dict(claims or {})

    def copy(self) -> DraManager:
        return DraManager(self.node, self.drivers, self.claims)

    # -- prepare / unprepare ------------------------------------------------------------
    def prepare(self, pod: PodSpec, lookup: ClaimLookup) -> str | None:
        """Prepare every claim of ``pod`` (looked up by namespace and name); the error as
        the kubelet words it (without its ``prepare dynamic resources:`` prefix), or None
        when every claim is prepared."""
        try:
            found = self._validate(pod, lookup)
        except ClaimProblem as exc:
            return str(exc)
        ref = _pod_ref(pod)
        batches: dict[str, list[ResourceClaim]] = {}
        for claim in found:
            info = self.claims.get(claim.key)
            if info is None:
                drivers = tuple(sorted({r.driver for r in claim.allocated or ()}))
                info = ClaimInfo(claim.namespace, claim.name, claim.uid, drivers)
            elif info.uid != claim.uid:
                return (
                    f"old ResourceClaim with same name {claim.name} and different UID "
                    f"{info.uid} still exists (previous pod force-deleted?!)"
                )
            self.claims[claim.key] = replace(info, pods=info.pods | {ref})
            if not info.prepared:
                for driver in info.drivers:
                    batches.setdefault(driver, []).append(claim)
        for driver in sorted(batches):
            for claim in batches[driver]:
                try:
                    devices = prepare_claim(self.drivers[driver], self.node, claim)
                except PrepareError as exc:
                    return f"NodePrepareResources failed for ResourceClaim {claim.name}: {exc}"
                # appended, as ClaimInfo.addDevice does: after a partial failure the
                # next attempt lists the devices of the drivers that succeeded twice
                info = self.claims[claim.key]
                before = info.devices.get(driver, ())
                self.claims[claim.key] = replace(
                    info, devices={**info.devices, driver: before + devices}
                )
        for claim in found:
            self.claims[claim.key] = replace(self.claims[claim.key], prepared=True)
        return None

    def _validate(self, pod: PodSpec, lookup: ClaimLookup) -> list[ResourceClaim]:
        found: list[ResourceClaim] = []
        templated = {c.name for c in pod.resource_claims if c.template_name is not None}
        for pod_claim, name in claim_names(pod):
            if name is None:
                continue  # the template needed no claim
            claim = lookup(pod.namespace, name)
            if claim is None:
                raise ClaimProblem(
                    f'fetch ResourceClaim {name}: resourceclaims.resource.k8s.io "{name}" not found'
                )
            if pod_claim in templated and not _owned(pod, claim):
                raise ClaimProblem(
                    f"ResourceClaim {claim.key} was not created for Pod {pod.key} (Pod is not "
                    "owner)"
                )
            if not _reserved(pod, claim):
                raise ClaimProblem(
                    f"pod {pod.name} ({pod.uid}) is not allowed to use ResourceClaim "
                    f"{claim.name} ({claim.uid})"
                )
            if claim.allocated is None:
                raise ClaimProblem(f"ResourceClaim {claim.name}: not allocated")
            for result in claim.allocated:
                if result.driver not in self.drivers:
                    raise ClaimProblem(f"DRA driver {result.driver} is not registered")
            found.append(claim)
        return found

    def is_prepared(self, pod: PodSpec) -> bool:
        """Whether every claim of ``pod`` is cached and prepared."""
        try:
            names = claim_names(pod)
        except ClaimProblem:
            return False
        for _, name in names:
            if name is None:
                continue
            info = self.claims.get(f"{pod.namespace}/{name}")
            if info is None or not info.prepared:
                return False
        return True

    def unprepare(self, pod: PodSpec) -> None:
        """The pod is gone: drop its references; claims no pod references are unprepared."""
        ref = _pod_ref(pod)
        for key, info in list(self.claims.items()):
            if ref not in info.pods:
                continue
            if info.pods == {ref}:
                del self.claims[key]
            else:
                self.claims[key] = replace(info, pods=info.pods - {ref})

    # -- podresources ------------------------------------------------------------------
    def container_resources(
        self, pod: PodSpec, container: ContainerSpec
    ) -> tuple[DynamicResource, ...]:
        """The container's ``dynamic_resources`` as podresources lists them."""
        used = {c.name for c in container.claims}
        if not used:
            return ()
        try:
            names = claim_names(pod)
        except ClaimProblem:
            return ()
        out: list[DynamicResource] = []
        for pod_claim, name in names:
            if pod_claim not in used or name is None:
                continue
            info = self.claims.get(f"{pod.namespace}/{name}")
            if info is None:
                return ()
            out.append(DynamicResource(info.name, info.namespace, _claim_resources(info)))
        return tuple(out)

    def pods_of(self, keys: Iterable[str]) -> frozenset[str]:
        """The pod references of the cached claims ``keys``."""
        return frozenset(ref for key in keys if key in self.claims for ref in self.claims[key].pods)


def _claim_resources(info: ClaimInfo) -> tuple[ClaimResource, ...]:
    out: list[ClaimResource] = []
    for driver in sorted(info.devices):
        cdi: list[str] = []  # one list per driver, appended to device after device
        for device in info.devices[driver]:
            cdi.extend(device.cdi_ids)
            out.append(
                ClaimResource(driver, device.pool, device.device, tuple(cdi), device.share_id)
            )
    return tuple(out)


def _owned(pod: PodSpec, claim: ResourceClaim) -> bool:
    if not pod.uid:
        return True  # a pod from a file: its claims are taken as its own
    return claim.controller_uid == pod.uid
