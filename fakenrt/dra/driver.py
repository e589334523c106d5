"""What fakenrt's DRA drivers do when the kubelet asks them to prepare a claim. Pure, and
shared by the simulated kubelet (``fakenrt.kubelet.dra``) and the fake DRA kubelet plugin
a real kubelet calls (``fakenrt.draplugin``), so both answer alike.

A claim's allocation results for this driver name devices of its pool; each must be a
device the driver publishes on this node, else preparing the claim fails (the kubelet
then reports ``NodePrepareResources failed for ResourceClaim <name>: <error>``). A device
is made available to containers through one CDI device, ``k8s.<driver>/device=<device>``
(the CDI spec the fake plugin writes defines it; the simulated devices do not exist, so
its only edit is an environment variable naming the device).
"""

from __future__ import annotations

from dataclasses import dataclass

from fakenrt.dra.claims import ResourceClaim
from fakenrt.profiles.model import DraDriver

CDI_CLASS = "device"


def cdi_kind(driver: str) -> str:
    """The CDI kind (``vendor/class``) of a driver's devices."""
    return f"k8s.{driver}/{CDI_CLASS}"


def cdi_device_id(driver: str, device: str) -> str:
    """The fully qualified CDI device name of one device."""
    return f"{cdi_kind(driver)}={device}"


@dataclass(frozen=True)
class PreparedDevice:
    """One device as NodePrepareResources returns it."""

    driver: str
    pool: str
    device: str
    request_names: tuple[str, ...]
    cdi_ids: tuple[str, ...]
    share_id: str | None = None


class PrepareError(ValueError):
    """The driver cannot prepare the claim; the message is the error it reports."""


def prepare_claim(driver: DraDriver, node: str, claim: ResourceClaim) -> tuple[PreparedDevice, ...]:
    """The devices of ``claim`` this driver prepares, in allocation order (one entry per
    allocated device: a device allocated to several requests lists them all). Raises
    :class:`PrepareError`."""
    if claim.allocated is None:
        raise PrepareError(f"ResourceClaim {claim.key} is not allocated")
    ordered: dict[tuple[str, str, str | None], list[str]] = {}
    for result in claim.allocated:
        if result.driver != driver.name:
            continue
        if result.pool != driver.pool or driver.device(result.device) is None:
            raise PrepareError(
                f"device {result.pool}/{result.device} is not a device of driver "
                f"{driver.name} on node {node} (pool {driver.pool})"
            )
        ordered.setdefault((result.pool, result.device, result.share_id), []).append(result.request)
    return tuple(
        PreparedDevice(
            driver=driver.name,
            pool=pool,
            device=device,
            request_names=tuple(requests),
            cdi_ids=(cdi_device_id(driver.name, device),),
            share_id=share,
        )
        for (pool, device, share), requests in ordered.items()
    )
