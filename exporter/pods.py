"""The few facts the exporter needs about a Pod object, read from the API's JSON.

Pure. ``pod_view`` keeps only what the reconciler decides on (identity, phase, the two
observed annotations, what the Memory Manager must report for it), so the node's pod
cache stays small however large the pod objects are.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from exporter.annotations import OBSERVED_MEMORY_GROUPS, OBSERVED_PLACEMENT

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
GUARANTEED = "Guaranteed"


class PodObjectError(ValueError):
    """A pod object the exporter cannot read; the message names the pod and the field."""


@dataclass(frozen=True, slots=True)
class PodView:
    """A pod as the exporter's cache holds it."""

    namespace: str
    name: str
    uid: str
    resource_version: str = ""
    phase: str = ""
    #: ``status.startTime`` (kubelet acknowledged the pod), seconds since the epoch.
    started_at: float | None = None
    deleting: bool = False
    qos_class: str = ""
    #: Containers (and native sidecars) that request memory or hugepages: the ones the
    #: Memory Manager's static policy gives blocks to when the pod is Guaranteed (none
    #: when the pod sets pod-level resources: the policy skips such a pod).
    memory_containers: frozenset[str] = frozenset()
    placement_annotation: str | None = None
    memory_groups_annotation: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def admitted(self) -> bool:
        """The kubelet has taken the pod on: Running, or Pending with a start time."""
        return self.phase == "Running" or (self.phase == "Pending" and self.started_at is not None)

    @property
    def writable(self) -> bool:
        """The exporter writes this pod's annotations: admitted, not terminal, not being
        deleted (the one rule for the daemon and ``numa-exporter observe``)."""
        return self.admitted and not self.terminal and not self.deleting

    def annotation(self, name: str) -> str | None:
        if name == OBSERVED_PLACEMENT:
            return self.placement_annotation
        if name == OBSERVED_MEMORY_GROUPS:
            return self.memory_groups_annotation
        raise KeyError(name)

    def with_metadata(self, meta: Mapping[str, Any]) -> PodView:
        """This pod after a write that changed only its metadata, from the ``metadata`` of
        the answer (a ``PartialObjectMetadata``): the new resourceVersion, the two
        annotations as the API server stored them, deletion. Everything else a write of
        metadata leaves as it was. Raises PodObjectError when the answer is another pod."""
        if meta.get("uid") != self.uid:
            raise PodObjectError(
                f"pod {self.key}: the answer's metadata.uid {meta.get('uid')!r} is not {self.uid!r}"
            )
        annotations = meta.get("annotations") or {}
        return replace(
            self,
            resource_version=str(meta.get("resourceVersion") or ""),
            deleting=meta.get("deletionTimestamp") is not None,
            placement_annotation=annotations.get(OBSERVED_PLACEMENT),
            memory_groups_annotation=annotations.get(OBSERVED_MEMORY_GROUPS),
        )

    def expected_memory_containers(self, *, memory_manager_static: bool) -> frozenset[str]:
        """Containers that must have reported memory blocks for the groups to be complete."""
        if memory_manager_static and self.qos_class == GUARANTEED:
            return self.memory_containers
        return frozenset()


def _timestamp(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=_dt.UTC)
    return parsed.timestamp()


_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$"
)


def _positive(raw: Any, where: str) -> bool:
    """Whether a quantity is above zero, without a full parse (the exporter only needs
    to know whether a container requests memory at all)."""
    match = _QUANTITY.match(str(raw).strip())
    if match is None:
        raise PodObjectError(f"{where}: {raw!r} is not a quantity")
    return match["sign"] != "-" and any(c in "123456789" for c in match["number"])


def _requests_memory(container: Mapping[str, Any], where: str) -> bool:
    resources = container.get("resources") or {}
    for kind in ("requests", "limits"):
        for name, raw in (resources.get(kind) or {}).items():
            if (name == "memory" or name.startswith("hugepages-")) and _positive(
                raw, f"{where}.resources.{kind}.{name}"
            ):
                return True
    return False


def _pod_level_resources_set(spec: Mapping[str, Any]) -> bool:
    """``spec.resources`` requests or limits CPU, memory or hugepages (the PodLevelResources
    feature). The static Memory Manager gives such a pod no blocks (upstream
    ``pkg/kubelet/cm/memorymanager/policy_static.go``, ``Allocate``)."""
    resources = spec.get("resources") or {}
    return any(
        name in ("cpu", "memory") or name.startswith("hugepages-")
        for kind in ("requests", "limits")
        for name in resources.get(kind) or {}
    )


def pod_view(obj: Mapping[str, Any]) -> PodView:
    """Read a Pod object (the API's JSON as a dict). Raises PodObjectError naming the pod."""
    meta = obj.get("metadata") or {}
    name, namespace, uid = meta.get("name"), meta.get("namespace"), meta.get("uid")
    if not (isinstance(name, str) and isinstance(namespace, str) and isinstance(uid, str)):
        raise PodObjectError(
            f"pod {namespace!r}/{name!r}: metadata.name, metadata.namespace and metadata.uid "
            "must be strings"
        )
    where = f"pod {namespace}/{name}: spec"
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    annotations = meta.get("annotations") or {}
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    memory_containers = frozenset(
        str(c.get("name"))
        for kind, containers in (
            ("initContainers", sidecars),
            ("containers", spec.get("containers") or []),
        )
        for c in containers
        if _requests_memory(c, f"{where}.{kind}({c.get('name')})")
    )
    if _pod_level_resources_set(spec):
        memory_containers = frozenset()
    # The API server sets status.qosClass when it creates the pod; without it the pod is
    # not treated as Guaranteed (its memory groups are then judged from its blocks alone).
    qos = status.get("qosClass")
    return PodView(
        namespace=namespace,
        name=name,
        uid=uid,
        resource_version=str(meta.get("resourceVersion") or ""),
        phase=str(status.get("phase") or ""),
        started_at=_timestamp(status.get("startTime")),
        deleting=meta.get("deletionTimestamp") is not None,
        qos_class=qos if isinstance(qos, str) else "",
        memory_containers=memory_containers,
        placement_annotation=annotations.get(OBSERVED_PLACEMENT),
        memory_groups_annotation=annotations.get(OBSERVED_MEMORY_GROUPS),
    )
