"""The resource.k8s.io/v1 objects a node's DRA drivers publish: ResourceSlices, and the
DeviceClasses their installations create. Pure (JSON-ready dicts).

Per node and driver, one pool (``pool.name``, default the node name) of the driver's
devices in as many slices as needed (at most 128 devices each, the API's limit), with
``nodeName`` set, ``pool.generation`` and ``pool.resourceSliceCount``, as the kubelet
plugin helper of ``k8s.io/dynamic-resource-allocation`` publishes them. Attributes in the
driver's own domain are written without it (``productName`` for ``gpu.nvidia.com/
productName``), as the drivers write them; other domains are written in full.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from fakenrt.profiles.model import DraAttribute, DraDevice, DraDriver, NodeProfile

API_VERSION = "resource.k8s.io/v1"
#: ``ResourceSliceMaxDevices`` (``k8s.io/api/resource/v1``).
MAX_DEVICES_PER_SLICE = 128
#: Object names are DNS subdomains of at most 253 characters.
MAX_NAME = 253


def _attribute(value: DraAttribute) -> dict[str, Any]:
    return {value.kind: value.value}


def _local(name: str, driver: str) -> str:
    return name.removeprefix(f"{driver}/")


def device_body(driver: DraDriver, device: DraDevice) -> dict[str, Any]:
    """One device of a slice."""
    attributes = {**driver.attributes, **device.attributes}
    capacity = {**driver.capacity, **device.capacity}
    body: dict[str, Any] = {"name": device.name}
    if attributes:
        body["attributes"] = {
            _local(k, driver.name): _attribute(v) for k, v in sorted(attributes.items())
        }
    if capacity:
        body["capacity"] = {k: {"value": v} for k, v in sorted(capacity.items())}
    if driver.cpu:
        body["allowMultipleAllocations"] = True
    return body


def slice_name(node: str, driver: str, index: int) -> str:
    """A stable name per node, driver and slice index (hashed when too long)."""
    name = f"{node}-{driver}-{index}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[: MAX_NAME - 11].rstrip('.-')}-{digest}"


def resource_slices(
    profile: NodeProfile,
    *,
    generation: int = 1,
    labels: Mapping[str, str] | None = None,
    owner: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Every ResourceSlice of the node, drivers in name order. ``owner``: an owner
    reference (the Node, so the slices go with it), ``labels`` on every slice."""
    out: list[dict[str, Any]] = []
    for driver in profile.dra:
        devices = [device_body(driver, d) for d in driver.devices]
        chunks = [
            devices[i : i + MAX_DEVICES_PER_SLICE]
            for i in range(0, len(devices), MAX_DEVICES_PER_SLICE)
        ] or [[]]
        for index, chunk in enumerate(chunks):
            metadata: dict[str, Any] = {"name": slice_name(profile.name, driver.name, index)}
            if labels:
                metadata["labels"] = dict(labels)
            if owner is not None:
                metadata["ownerReferences"] = [dict(owner)]
            spec: dict[str, Any] = {
                "driver": driver.name,
                "nodeName": profile.name,
                "pool": {
                    "name": driver.pool,
                    "generation": generation,
                    "resourceSliceCount": len(chunks),
                },
            }
            if chunk:
                spec["devices"] = chunk
            out.append(
                {
                    "apiVersion": API_VERSION,
                    "kind": "ResourceSlice",
                    "metadata": metadata,
                    "spec": spec,
                }
            )
    return out


class DeviceClassConflict(ValueError):
    """Two nodes define the same DeviceClass name with different selectors."""


def device_classes(
    profiles: Iterable[NodeProfile], *, labels: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """The DeviceClasses the fleet's drivers' installations create, one per name."""
    selectors: dict[str, tuple[str, str]] = {}
    for profile in profiles:
        for driver in profile.dra:
            known = selectors.setdefault(driver.device_class, (driver.class_selector, profile.name))
            if known[0] != driver.class_selector:
                raise DeviceClassConflict(
                    f"DeviceClass {driver.device_class}: node {profile.name} selects "
                    f"{driver.class_selector!r}, node {known[1]} {known[0]!r}"
                )
    out = []
    for name, (selector, _) in sorted(selectors.items()):
        metadata: dict[str, Any] = {"name": name}
        if labels:
            metadata["labels"] = dict(labels)
        out.append(
            {
                "apiVersion": API_VERSION,
                "kind": "DeviceClass",
                "metadata": metadata,
                "spec": {"selectors": [{"cel": {"expression": selector}}]},
            }
        )
    return out


def on_node(profile: NodeProfile, node: str) -> NodeProfile:
    """The profile as published on the Kubernetes node ``node`` (a real node's name is
    not the profile's): renamed, and pools named after the profile node follow."""
    drivers = tuple(replace(d, pool=node) if d.pool == profile.name else d for d in profile.dra)
    return replace(profile, name=node, dra=drivers)
