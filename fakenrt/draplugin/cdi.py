"""The CDI spec a fake DRA driver writes for its devices. Pure.

The kubelet hands the CDI device ids a driver's ``NodePrepareResources`` returned to the
container runtime, which resolves them in the CDI specs of its spec directories
(``/etc/cdi``, ``/var/run/cdi``) and applies their container edits - a runtime with CDI
support refuses to start a container naming an unknown CDI device. One spec per driver
(``k8s.<driver>-device.json``, kind ``k8s.<driver>/device``) defines every device of the
node; the devices do not exist, so a device's only edit is an environment variable
naming it (``FAKENRT_DRA_<DRIVER>_<DEVICE>=<device>``). Format: the Container Device
Interface specification, version 0.6.0 (a kind is ``vendor/class``; a vendor is letters,
digits, ``.``, ``_`` and ``-``; a device name letters, digits, ``_``, ``-``, ``.`` and
``:``).
"""

from __future__ import annotations

import re
from typing import Any

from fakenrt.dra.driver import CDI_CLASS, cdi_kind
from fakenrt.profiles.model import DraDriver

CDI_VERSION = "0.6.0"
_VENDOR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]$")
_DEVICE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")


def spec_file_name(driver: str) -> str:
    return f"k8s.{driver}-{CDI_CLASS}.json"


def env_name(driver: str, device: str) -> str:
    return "FAKENRT_DRA_" + re.sub(r"[^A-Za-z0-9]", "_", f"{driver}_{device}").upper()


def cdi_spec(driver: DraDriver) -> dict[str, Any]:
    """The CDI spec of every device of ``driver``. Raises ValueError for names CDI
    does not allow (a DRA driver name and device names always fit)."""
    vendor, _, klass = cdi_kind(driver.name).partition("/")
    if not _VENDOR.match(vendor):
        raise ValueError(f"CDI vendor {vendor!r} is not valid")
    devices = []
    for device in driver.devices:
        if not _DEVICE.match(device.name):
            raise ValueError(f"CDI device name {device.name!r} is not valid")
        devices.append(
            {
                "name": device.name,
                "containerEdits": {"env": [f"{env_name(driver.name, device.name)}={device.name}"]},
            }
        )
    return {"cdiVersion": CDI_VERSION, "kind": f"{vendor}/{klass}", "devices": devices}
