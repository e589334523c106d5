"""Which nodes may take a pod whose zones the scheduler predicts, given the pods there that
the kubelet has not admitted yet. Pure.

A prediction holds only if the kubelet admits the node's pods in the order the scheduler
assumed them: bind order. It does while it is up - each bound pod reaches it in its own
watch event. But pods bound while a kubelet is down (or restarting, or relisting) reach it
in one batch, and it sorts a batch by ``creationTimestamp`` before admitting it
(``HandlePodAdditions`` in ``pkg/kubelet/kubelet.go``). The timestamp has whole seconds
(``metav1.Time``), and pods with equal timestamps keep the batch's order, which comes from
an unordered store: pods created in the same second - a burst - are admitted in any
order. The zones the kubelet gives each then differ from the predicted ones, and under
``single-numa-node`` a pod can be rejected (``TopologyAffinityError``).

So a pod ``P`` the scheduler would place on zones of a node is kept off that node while
some pod ``Q`` bound there awaits admission with a predicted placement and was created in
``P``'s second or later: whatever batch the kubelet may see, the node's unadmitted
predicted pods then come in strictly increasing creation seconds, which is bind order.
``Q`` awaits admission while its phase is ``Pending``, it has no ``status.startTime`` (the
kubelet's status manager sets that at the first sync after admitting it) and no observed
placement. A pod with no creation time on either side counts as the same second.
``P`` goes to another node, or waits until the kubelet admits ``Q`` - a delay only in a
burst on a node whose kubelet has not caught up, and none for pods that hold no zones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from exporter.annotations import OBSERVED_PLACEMENT, PREDICTED_PLACEMENT
from fakenrt.controller.timestamps import parse_rfc3339
from fakenrt.scheduler.cluster import PodSnapshot

#: The category of the filter rejection (the scheduler's metric label).
CATEGORY = "admission order"

#: Stands for an unknown creation time: later than every second.
_UNKNOWN = float("inf")


def creation_second(created: str) -> float:
    """Whole seconds since the epoch of a ``creationTimestamp`` (RFC 3339); unknown
    (empty or unreadable) is later than every second."""
    if not created:
        return _UNKNOWN
    try:
        return float(int(parse_rfc3339(created)))
    except ValueError:
        return _UNKNOWN


def awaits_admission(pod: PodSnapshot) -> bool:
    """Bound, with a predicted placement, and not admitted yet (see the module docstring)."""
    annotations = pod.spec.annotations
    return (
        bool(pod.spec.node_name)
        and pod.phase == "Pending"
        and not pod.started
        and bool(annotations.get(PREDICTED_PLACEMENT, "").strip("[] "))
        and OBSERVED_PLACEMENT not in annotations
    )


class AdmissionQueues:
    """Per node, the latest creation second of the pods awaiting admission there, kept up
    to date through a cycle as it binds. Seconds are whole seconds since any epoch
    (:func:`creation_second`; ``fakenrt simulate`` uses its simulated clock's)."""

    def __init__(self, pods: Iterable[PodSnapshot] = ()) -> None:
        self._latest: dict[str, tuple[float, str]] = {}
        for pod in pods:
            if awaits_admission(pod):
                self.bound(pod.spec.node_name or "", pod)

    def bound(self, node: str, pod: PodSnapshot) -> None:
        """``pod`` was bound to ``node`` with a placement on its zones."""
        self.bound_at(node, creation_second(pod.created), pod.key)

    def bound_at(self, node: str, second: float, key: str) -> None:
        """Pod ``key``, created in ``second``, was bound to ``node`` holding zones."""
        kept = self._latest.get(node)
        if kept is None or second >= kept[0]:
            self._latest[node] = (second, key)

    def barred(self, pod: PodSnapshot) -> dict[str, str]:
        """node -> why ``pod`` may not hold zones there now (only the nodes where it may
        not)."""
        return self.barred_at(creation_second(pod.created))

    def barred_at(self, second: float) -> dict[str, str]:
        """The same for a pod created in ``second``."""
        if not self._latest:
            return {}
        return {
            node: _reason(key)
            for node, (latest, key) in self._latest.items()
            if second == _UNKNOWN or latest >= second
        }


def only_barred(categories: Mapping[str, str]) -> bool:
    """Whether a pod that fits nowhere fits on some node but for a bar: it is retried at
    the next cycle, without the backoff of a pod that fits nowhere (the bar lifts when the
    kubelet admits)."""
    return CATEGORY in categories.values()


def _reason(key: str) -> str:
    return (
        f"{CATEGORY}: pod {key} on the node awaits admission and was created in the same "
        "second or later; the kubelet admits such pods in no fixed order"
    )
