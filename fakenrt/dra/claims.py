"""ResourceClaims as the kubelet reads them: the allocation the scheduler wrote, the pods
it reserved the claim for, the claim's owner. Pure.

From a resource.k8s.io/v1 ResourceClaim (a dict, from a file or the API):
``status.allocation.devices.results`` (per allocated device: request, driver, pool,
device, ``shareID`` and ``consumedCapacity`` for a device allocated several times),
``status.reservedFor`` (the consumers, by uid) and the controlling owner reference (a
claim made from a pod's template is controlled by that pod).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class ClaimSpecError(ValueError):
    """A ResourceClaim this project cannot read; the message names it and the field."""


@dataclass(frozen=True)
class AllocatedDevice:
    """One entry of ``status.allocation.devices.results``."""

    request: str
    driver: str
    pool: str
    device: str
    share_id: str | None = None
    #: ``consumedCapacity``: capacity name -> quantity string.
    consumed: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ResourceClaim:
    namespace: str
    name: str
    uid: str = ""
    #: The uid of the controlling owner reference (the pod of a template's claim).
    controller_uid: str | None = None
    #: None while the claim is not allocated.
    allocated: tuple[AllocatedDevice, ...] | None = None
    #: The uids in ``status.reservedFor``.
    reserved_for: frozenset[str] = frozenset()
    #: The pod names in ``status.reservedFor`` (files may leave the uid out).
    reserved_names: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _text(value: object, where: str, *, required: bool = True) -> str:
    if isinstance(value, str) and value:
        return value
    if value is None and not required:
        return ""
    raise ClaimSpecError(f"{where}: expected a non-empty string")


def _results(raw: Any, where: str) -> tuple[AllocatedDevice, ...]:
    if not isinstance(raw, list):
        raise ClaimSpecError(f"{where}: expected a list")
    out = []
    for i, entry in enumerate(raw):
        item = f"{where}[{i}]"
        if not isinstance(entry, Mapping):
            raise ClaimSpecError(f"{item}: expected a mapping")
        share = entry.get("shareID")
        consumed = entry.get("consumedCapacity") or {}
        if not isinstance(consumed, Mapping):
            raise ClaimSpecError(f"{item}.consumedCapacity: expected a mapping")
        out.append(
            AllocatedDevice(
                request=_text(entry.get("request"), f"{item}.request"),
                driver=_text(entry.get("driver"), f"{item}.driver"),
                pool=_text(entry.get("pool"), f"{item}.pool"),
                device=_text(entry.get("device"), f"{item}.device"),
                share_id=str(share) if share is not None else None,
                consumed={str(k): str(v) for k, v in consumed.items()},
            )
        )
    return tuple(out)


def claim_from_manifest(manifest: Mapping[str, Any], *, source: str = "claim") -> ResourceClaim:
    """Read a ResourceClaim. Raises :class:`ClaimSpecError` naming ``source`` and the field."""
    if not isinstance(manifest, Mapping):
        raise ClaimSpecError(f"{source}: a ResourceClaim must be a mapping")
    meta = manifest.get("metadata")
    if not isinstance(meta, Mapping):
        raise ClaimSpecError(f"{source}: metadata is required")
    name = _text(meta.get("name"), f"{source}: metadata.name")
    namespace = str(meta.get("namespace") or "default")
    where = f"{source}: ResourceClaim {namespace}/{name}"
    controller = None
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            controller = str(ref.get("uid") or "")
    status = manifest.get("status") or {}
    if not isinstance(status, Mapping):
        raise ClaimSpecError(f"{where}: status must be a mapping")
    allocated = None
    allocation = status.get("allocation")
    if allocation is not None:
        if not isinstance(allocation, Mapping):
            raise ClaimSpecError(f"{where}: status.allocation must be a mapping")
        devices = allocation.get("devices") or {}
        if not isinstance(devices, Mapping):
            raise ClaimSpecError(f"{where}: status.allocation.devices must be a mapping")
        allocated = _results(
            devices.get("results") or [], f"{where}: status.allocation.devices.results"
        )
    uids: set[str] = set()
    names: set[str] = set()
    reserved = status.get("reservedFor") or []
    if not isinstance(reserved, list):
        raise ClaimSpecError(f"{where}: status.reservedFor must be a list")
    for i, entry in enumerate(reserved):
        if not isinstance(entry, Mapping):
            raise ClaimSpecError(f"{where}: status.reservedFor[{i}] must be a mapping")
        if entry.get("resource") == "pods" and not entry.get("apiGroup"):
            if entry.get("uid"):
                uids.add(str(entry["uid"]))
            if entry.get("name"):
                names.add(str(entry["name"]))
    return ResourceClaim(
        namespace=namespace,
        name=name,
        uid=str(meta.get("uid") or ""),
        controller_uid=controller,
        allocated=allocated,
        reserved_for=frozenset(uids),
        reserved_names=frozenset(names),
    )
