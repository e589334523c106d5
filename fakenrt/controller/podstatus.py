"""Pod status bodies the simulated kubelet writes, one function per lifecycle step. Pure.

Each returns a ``status`` mapping for a strategic-merge patch of ``pods/status``
(conditions merge by ``type``, container statuses by ``name``). The shapes follow what
the kubelet's status manager reports; container ids are stable hashes of pod uid and
container name so a seeded run writes identical objects.

* admitted, containers not started yet: :func:`pending_status` (``ContainerCreating``);
* started: :func:`running_status`;
* completed (run duration elapsed): :func:`succeeded_status`;
* rejected at admission: :func:`rejected_status` - exactly what the kubelet's
  ``rejectPod`` writes (``pkg/kubelet/kubelet.go``): phase Failed, the reason, and the
  message prefixed with ``Pod was rejected: ``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from fakenrt.controller.pods import ObservedPod
from fakenrt.controller.timestamps import rfc3339

REJECTED_PREFIX = "Pod was rejected: "


def container_id(uid: str, container: str) -> str:
    digest = hashlib.sha256(f"{uid}/{container}".encode()).hexdigest()
    return f"fakenrt://{digest}"


def _cond(kind: str, ok: bool, at: float, reason: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": kind,
        "status": "True" if ok else "False",
        "lastProbeTime": None,
        "lastTransitionTime": rfc3339(at),
    }
    if reason:
        out["reason"] = reason
    return out


def _image(pod: ObservedPod, name: str) -> str:
    return pod.images.get(name) or "fakenrt/none"


def _containers(pod: ObservedPod) -> tuple[list[str], list[tuple[str, bool]]]:
    """(regular container names, [(init container name, is sidecar)])."""
    if pod.spec is None:
        return [], []
    regular = [c.name for c in pod.spec.containers]
    inits = [(c.name, c.restartable) for c in pod.spec.init_containers]
    return regular, inits


def _status(pod: ObservedPod, name: str, state: dict[str, Any], *, ready: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "image": _image(pod, name),
        "imageID": "",
        "ready": ready,
        "restartCount": 0,
        "started": "running" in state,
        "state": state,
    }
    if "waiting" not in state:
        out["containerID"] = container_id(pod.uid, name)
        out["imageID"] = _image(pod, name)
    return out


def pending_status(pod: ObservedPod, *, at: float, host_ip: str) -> dict[str, Any]:
    """Admitted, containers being created."""
    regular, inits = _containers(pod)
    waiting = {"waiting": {"reason": "ContainerCreating"}}
    init_waiting = {"waiting": {"reason": "PodInitializing"}}
    return {
        "phase": "Pending",
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "startTime": rfc3339(at),
        "conditions": [
            _cond("PodReadyToStartContainers", False, at),
            _cond("Initialized", not inits, at, None if not inits else "ContainersNotInitialized"),
            _cond("Ready", False, at, "ContainersNotReady"),
            _cond("ContainersReady", False, at, "ContainersNotReady"),
        ],
        "containerStatuses": [_status(pod, n, waiting, ready=False) for n in regular],
        "initContainerStatuses": [
            _status(pod, n, waiting if i == 0 else init_waiting, ready=False)
            for i, (n, _) in enumerate(inits)
        ],
    }


def running_status(
    pod: ObservedPod, *, admitted_at: float, at: float, host_ip: str, pod_ip: str
) -> dict[str, Any]:
    """All containers started and ready; init containers completed, sidecars running."""
    regular, inits = _containers(pod)
    running = {"running": {"startedAt": rfc3339(at)}}
    completed = {
        "terminated": {
            "exitCode": 0,
            "reason": "Completed",
            "startedAt": rfc3339(admitted_at),
            "finishedAt": rfc3339(at),
        }
    }
    return {
        "phase": "Running",
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": rfc3339(admitted_at),
        "conditions": [
            _cond("PodReadyToStartContainers", True, at),
            _cond("Initialized", True, at),
            _cond("Ready", True, at),
            _cond("ContainersReady", True, at),
        ],
        "containerStatuses": [_status(pod, n, running, ready=True) for n in regular],
        "initContainerStatuses": [
            _status(pod, n, running if sidecar else completed, ready=sidecar)
            for n, sidecar in inits
        ],
    }


def succeeded_status(pod: ObservedPod, *, started_at: float, at: float) -> dict[str, Any]:
    """Every container exited 0."""
    regular, inits = _containers(pod)
    done = {
        "terminated": {
            "exitCode": 0,
            "reason": "Completed",
            "startedAt": rfc3339(started_at),
            "finishedAt": rfc3339(at),
        }
    }
    return {
        "phase": "Succeeded",
        "conditions": [
            _cond("PodReadyToStartContainers", False, at),
            _cond("Ready", False, at, "PodCompleted"),
            _cond("ContainersReady", False, at, "PodCompleted"),
        ],
        "containerStatuses": [_status(pod, n, done, ready=False) for n in regular],
        "initContainerStatuses": [_status(pod, n, done, ready=False) for n, _ in inits],
    }


def rejected_status(*, reason: str, message: str) -> dict[str, Any]:
    """The kubelet's ``rejectPod``: phase Failed, reason, ``Pod was rejected: <message>``."""
    return {"phase": "Failed", "reason": reason, "message": REJECTED_PREFIX + message}
