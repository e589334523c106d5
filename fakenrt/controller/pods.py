"""Pods as the controller sees them on the watch: the fields the simulated kubelet acts on.

Pure. :func:`observe_pod` reads a Pod manifest (a dict from the API) once; everything
downstream works on the frozen :class:`ObservedPod`. A pod whose resources cannot be read
keeps the error (``spec`` is None, ``error`` says why) so the controller can fail it the
way the kubelet fails a pod it cannot admit, instead of crashing or ignoring it.

Annotations the controller reads and writes (``fakenrt.io/``):

* :data:`SEQUENCE_ANNOTATION` - written by the controller when it admits a pod: the
  pod's admission sequence number on its node (1, 2, ...). After a restart the controller
  re-admits a node's pods in this order (see ``docs/controller.md``).
* :data:`ALLOCATION_ANNOTATION` - written with the sequence number: exactly what the
  simulated kubelet gave the pod (CPU ids, device ids, memory blocks per container;
  :mod:`fakenrt.kubelet.allocation_codec`), the controller's stand-in for the kubelet's
  checkpoint files. After a restart the pod gets exactly this back.
* :data:`RUN_DURATION_ANNOTATION` - set by users: how long the pod runs before it
  Succeeds (``30s``, ``5m``, ``1h30m`` or seconds); absent means the controller default.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fakenrt.controller.timestamps import parse_rfc3339
from fakenrt.nrt.koordlet import KoordinatorPod, koordinator_pod
from fakenrt.podspec import TERMINAL_PHASES, PodSpec, PodSpecError, pod_from_manifest

SEQUENCE_ANNOTATION = "fakenrt.io/admission-sequence"
ALLOCATION_ANNOTATION = "fakenrt.io/allocation"
RUN_DURATION_ANNOTATION = "fakenrt.io/run-duration"


@dataclass(frozen=True)
class ObservedPod:
    """One Pod object as last seen on the watch."""

    namespace: str
    name: str
    uid: str
    node: str
    phase: str
    #: ``metadata.deletionTimestamp`` is set: the pod is being deleted.
    deleting: bool
    #: ``metadata.creationTimestamp`` in seconds (0 when absent).
    created: float
    spec: PodSpec | None
    #: Why ``spec`` is None (the PodSpecError message).
    error: str | None = None
    #: Admission sequence number on its node, from :data:`SEQUENCE_ANNOTATION`.
    sequence: int | None = None
    #: The recorded allocation, as written in :data:`ALLOCATION_ANNOTATION` (not parsed).
    allocation: str | None = None
    run_duration: str | None = None
    #: ``status.startTime`` in seconds (None before the kubelet started it).
    started: float | None = None
    #: ``status.podIP`` ("" when none).
    pod_ip: str = ""
    #: container name -> image, for container statuses.
    images: Mapping[str, str] = field(default_factory=dict)
    #: What Koordinator's node agent reads of the pod (its NRT, ``nrt.koordlet``).
    koordinator: KoordinatorPod = field(default_factory=lambda: KoordinatorPod(uid=""))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES


def _sequence(raw: object) -> int | None:
    if isinstance(raw, str) and raw.isdigit():
        return int(raw)
    return None


def _text(raw: object) -> str | None:
    return raw if isinstance(raw, str) else None


def observe_pod(manifest: Mapping[str, Any]) -> ObservedPod:
    """Read the fields the controller needs from a Pod manifest dict (API JSON)."""
    meta = manifest.get("metadata") or {}
    spec_raw = manifest.get("spec") or {}
    status = manifest.get("status") or {}
    annotations = meta.get("annotations") or {}
    namespace = str(meta.get("namespace") or "default")
    name = str(meta.get("name") or "")
    try:
        spec: PodSpec | None = pod_from_manifest(manifest, source="watch")
        error = None
    except PodSpecError as exc:
        spec, error = None, str(exc)
    images = {
        str(c.get("name")): str(c.get("image") or "")
        for c in (*(spec_raw.get("initContainers") or ()), *(spec_raw.get("containers") or ()))
        if isinstance(c, Mapping)
    }
    created = meta.get("creationTimestamp")
    started = status.get("startTime")
    return ObservedPod(
        namespace=namespace,
        name=name,
        uid=str(meta.get("uid") or ""),
        node=str(spec_raw.get("nodeName") or ""),
        phase=str(status.get("phase") or "Pending"),
        deleting=meta.get("deletionTimestamp") is not None,
        created=parse_rfc3339(created) if isinstance(created, str) else 0.0,
        spec=spec,
        error=error,
        sequence=_sequence(annotations.get(SEQUENCE_ANNOTATION)),
        allocation=_text(annotations.get(ALLOCATION_ANNOTATION)),
        run_duration=_text(annotations.get(RUN_DURATION_ANNOTATION)),
        images=images,
        started=parse_rfc3339(started) if isinstance(started, str) else None,
        pod_ip=str(status.get("podIP") or ""),
        koordinator=koordinator_pod(
            str(meta.get("uid") or ""), _strings(meta.get("labels")), _strings(annotations)
        ),
    )


def _strings(raw: object) -> dict[str, str]:
    """The string entries of a labels or annotations map (anything else is left out)."""
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): v for k, v in raw.items() if isinstance(v, str)}


def recovery_order(seed: int) -> Callable[[ObservedPod], tuple[int, int, float, bytes, str]]:
    """Sort key that re-creates a node's admission order after a restart: pods the
    controller admitted before (sequence annotation) first, by sequence; then the rest by
    creation time, and pods of one creation second in an order drawn from ``seed`` and the
    pod's name. The kubelet sorts a batch by ``creationTimestamp`` - whole seconds - and
    leaves ties in the order of an unordered store (``HandlePodAdditions``,
    ``pkg/kubelet/kubelet.go``), so a burst of one second may come in any order; breaking
    ties by name would admit a burst named in bind order in bind order, always. Seeded, so
    a run is reproducible (the controller's ``--seed``)."""

    def key(pod: ObservedPod) -> tuple[int, int, float, bytes, str]:
        if pod.sequence is not None:
            return (0, pod.sequence, 0.0, b"", pod.key)
        tie = hashlib.blake2b(f"{seed}/{pod.key}".encode(), digest_size=8).digest()
        return (1, 0, pod.created, tie, pod.key)

    return key
