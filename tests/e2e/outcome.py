"""What a scenario run left behind, and what it amounts to. Pure.

The driver (tests/e2e/driver.py) fills an :class:`Outcome`: the pods as they ended, what
the kubelets hold, the namespace's events, the timeline it saw, and what the harness
itself checked on the way (no resource held twice, the exporter and NRT caught up). The
pytest suite asserts on it; the scorecard turns it into a record (tests/scorecard).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from exporter.annotations import (
    PREDICTED_MEMORY_GROUPS,
    PREDICTED_PLACEMENT,
    AnnotationFormatError,
    MemoryGroup,
    ZonePlacement,
    format_memory_groups,
    format_placement,
    parse_memory_groups,
    parse_placement,
)
from fakenrt.profiles import NodeProfile
from tests.e2e.allocations import Allocations, zone_amounts
from tests.e2e.variants import Variant

TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"
#: What kube-scheduler (and most schedulers) write when no node fits a pod: the pod's
#: ``PodScheduled`` condition False with this reason, and an event.
UNSCHEDULABLE = "Unschedulable"
#: Event reasons a scheduler reports a pod it cannot place with (kube-scheduler and the
#: reference scheduler: FailedScheduling; KAI: Unschedulable).
UNSCHEDULABLE_EVENT_REASONS = frozenset({"FailedScheduling", UNSCHEDULABLE})
KUBELET = "kubelet"


@dataclass(frozen=True)
class Transition:
    """One line of a run's timeline: at ``at_s`` seconds after the run started, ``pod``
    (empty for a node-level line) did ``what`` (submitted, bound, Running, Succeeded,
    Failed, unschedulable, or an event's reason), with ``detail``."""

    at_s: float
    pod: str
    what: str
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """One scenario run, as it ended."""

    scenario: str
    variant: Variant
    #: Every pod of the run's namespace at the end, by name.
    pods: Mapping[str, Mapping[str, Any]]
    #: The pods the scheduler under test placed, and those bound without any scheduler.
    workload: tuple[str, ...]
    prebound: tuple[str, ...]
    #: What the kubelets hold (or held, for pods that finished) per pod.
    allocations: Allocations
    #: The namespace's events at the end.
    events: tuple[Mapping[str, Any], ...] = ()
    timeline: tuple[Transition, ...] = ()
    #: Seconds after the start at which the first workload pod was submitted.
    first_submit_s: float | None = None
    #: The deployment's nodes, named as the Nodes that run them (a Kind worker's name on
    #: real kubelets), in the topology's order.
    profiles: tuple[NodeProfile, ...] = ()
    #: Every pod reached a state it keeps (or the scheduler reports it cannot place it).
    settled: bool = True
    #: Seconds from the start until settled (or given up).
    duration_s: float = 0.0
    #: CPUs or devices two pods held at once, seen at any poll (the harness's invariant).
    double_allocations: tuple[str, ...] = ()
    #: Running pods whose observed annotations never matched their allocation (with the
    #: exporter only; the harness's invariant).
    observation_mismatches: tuple[str, ...] = ()
    #: Nodes whose NRT never converged to what their kubelet holds.
    nrt_mismatches: tuple[str, ...] = ()
    #: Pods someone else than the harness deleted (a scheduler evicting or cleaning up),
    #: as last seen - marked rejected when their kubelet's event says so.
    deleted: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: What the driver gave up waiting for, and when.
    notes: tuple[str, ...] = ()
    #: The pods as the driver created them.
    manifests: tuple[Mapping[str, Any], ...] = ()
    #: The event reasons the scheduler reports an unplaceable pod with.
    report_reasons: tuple[str, ...] = tuple(sorted(UNSCHEDULABLE_EVENT_REASONS))
    #: Running pods whose DRA devices lie off the NUMA nodes of their exclusive CPUs and
    #: memory, with how (from what the kubelets hold: tests/e2e/dra.py).
    misaligned: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: The pods the exporters' metric ``numa_exporter_dra_pod_misaligned`` names, and
    #: those their ``DRAMisaligned`` Events name; None: not read (no exporter, or a
    #: scenario without ResourceClaims).
    misaligned_metric: frozenset[str] | None = None
    misaligned_events: frozenset[str] | None = None

    # ---- counting ----------------------------------------------------------------------

    def pod(self, name: str) -> Mapping[str, Any] | None:
        """The pod as last seen: as listed at the end, or when it was deleted."""
        return self.pods.get(name) or self.deleted.get(name)

    def workload_pods(self) -> list[Mapping[str, Any]]:
        """The scheduler's pods as last seen (deleted ones included)."""
        return [p for p in map(self.pod, self.workload) if p is not None]

    def node(self, index: int) -> str:
        """The Node running the scenario's ``index``-th topology node."""
        return self.profiles[index].name

    def profile_of_node(self) -> dict[str, NodeProfile]:
        """Node name -> its profile."""
        return {p.name: p for p in self.profiles}

    def bind_times(self) -> dict[str, float]:
        """Pod -> when it was first seen bound."""
        out: dict[str, float] = {}
        for t in self.timeline:
            if t.what == "bound" and t.pod not in out:
                out[t.pod] = t.at_s
        return out

    def seconds_to_last_bind(self) -> float | None:
        """From the first workload submission to the last workload bind (None: nothing
        was bound)."""
        binds = self.bind_times()
        times = [binds[n] for n in self.workload if n in binds]
        if not times or self.first_submit_s is None:
            return None
        return round(max(times) - self.first_submit_s, 2)


# ---- pods ----------------------------------------------------------------------------


def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def node_of(pod: Mapping[str, Any]) -> str | None:
    return (pod.get("spec") or {}).get("nodeName") or None


def annotations_of(pod: Mapping[str, Any]) -> dict[str, str]:
    return dict((pod.get("metadata") or {}).get("annotations") or {})


def name_of(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")


def rejected(pod: Mapping[str, Any]) -> bool:
    """Refused by the (simulated) kubelet's Topology Manager, as the pod's status says."""
    status = pod.get("status") or {}
    return phase(pod) == "Failed" and status.get("reason") == TOPOLOGY_AFFINITY_ERROR


def admission_failure(pod: Mapping[str, Any]) -> str | None:
    """The reason a bound pod was refused at admission for anything but topology
    (``OutOfcpu``, ``UnexpectedAdmissionError``...), or None."""
    status = pod.get("status") or {}
    reason = status.get("reason")
    if phase(pod) != "Failed" or not reason or reason == TOPOLOGY_AFFINITY_ERROR:
        return None
    if not str(status.get("message") or "").startswith("Pod was rejected"):
        return None
    return str(reason)


def ran(pod: Mapping[str, Any]) -> bool:
    """Admitted and started: Running now, or Succeeded."""
    return phase(pod) in ("Running", "Succeeded")


@dataclass(frozen=True)
class Figures:
    """Outcome counts of a workload, as the lead reports them."""

    submitted: int
    bound: int
    ran: int
    running: int
    topology_affinity_errors: int
    pending: int

    def line(self, label: str) -> str:
        return (
            f"{label}: submitted={self.submitted} bound={self.bound} "
            f"Running-or-completed={self.ran} Running-now={self.running} "
            f"TopologyAffinityErrors={self.topology_affinity_errors} Pending={self.pending}"
        )


def figures(listed: Iterable[Mapping[str, Any]]) -> Figures:
    """Counts over ``listed``: bound, ran (Running or Succeeded), Running now, refused by
    the Topology Manager, never bound."""
    items = list(listed)
    return Figures(
        submitted=len(items),
        bound=sum(1 for p in items if node_of(p)),
        ran=sum(1 for p in items if ran(p)),
        running=sum(1 for p in items if phase(p) == "Running"),
        topology_affinity_errors=sum(1 for p in items if rejected(p)),
        pending=sum(1 for p in items if not node_of(p)),
    )


def unschedulable_condition(pod: Mapping[str, Any]) -> str | None:
    """The message of a ``PodScheduled=False`` condition with reason ``Unschedulable``."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if (c.get("type"), c.get("status"), c.get("reason")) == (
            "PodScheduled",
            "False",
            UNSCHEDULABLE,
        ):
            return str(c.get("message") or UNSCHEDULABLE)
    return None


def scheduler_reports(
    events: Iterable[Mapping[str, Any]], reasons: Iterable[str] = UNSCHEDULABLE_EVENT_REASONS
) -> dict[str, list[str]]:
    """Pod name -> the messages of the events (of one of ``reasons``) a scheduler reports
    it unplaceable with."""
    wanted = frozenset(reasons)
    out: dict[str, list[str]] = {}
    for e in events:
        involved = e.get("involvedObject") or {}
        if involved.get("kind") == "Pod" and e.get("reason") in wanted:
            out.setdefault(str(involved.get("name")), []).append(str(e.get("message") or ""))
    return out


def scheduler_messages(pod: Mapping[str, Any], reports: Mapping[str, list[str]]) -> list[str]:
    """What the scheduler said about ``pod`` being unplaceable: the condition's message
    and its events' (empty: it said nothing)."""
    messages = list(reports.get(name_of(pod), []))
    condition = unschedulable_condition(pod)
    if condition is not None:
        messages.insert(0, condition)
    return messages


# ---- kubelet rejections --------------------------------------------------------------


@dataclass(frozen=True)
class KubeletRejection:
    """A kubelet's Warning event refusing a pod at admission."""

    pod: str
    uid: str
    node: str
    reason: str


def kubelet_rejections(events: Iterable[Mapping[str, Any]]) -> list[KubeletRejection]:
    """The TopologyAffinityError events a kubelet recorded (source component ``kubelet``;
    the simulated kubelet writes them as the real one does, docs/controller.md)."""
    out = []
    for e in events:
        involved = e.get("involvedObject") or {}
        source = e.get("source") or {}
        component = source.get("component") or e.get("reportingComponent")
        if (
            involved.get("kind") == "Pod"
            and e.get("reason") == TOPOLOGY_AFFINITY_ERROR
            and component == KUBELET
        ):
            out.append(
                KubeletRejection(
                    pod=str(involved.get("name") or ""),
                    uid=str(involved.get("uid") or ""),
                    node=str(source.get("host") or e.get("reportingInstance") or ""),
                    reason=str(e.get("reason")),
                )
            )
    return out


def unrecorded_rejections(outcome: Outcome) -> list[str]:
    """Problems with the count of TopologyAffinityErrors: a pod counted as rejected
    without its kubelet's record (the event from the kubelet of the node it is bound
    to, for its uid), or a kubelet's record of a pod not counted."""
    records = kubelet_rejections(outcome.events)
    problems = []
    counted = set()
    for pod in [*outcome.pods.values(), *outcome.deleted.values()]:
        if not rejected(pod):
            continue
        name = name_of(pod)
        counted.add(name)
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        node = node_of(pod)
        if not any(r.pod == name and r.uid == uid and r.node == node for r in records):
            problems.append(
                f"{name}: counted as {TOPOLOGY_AFFINITY_ERROR} on {node} without the "
                f"kubelet's event for uid {uid}"
            )
    for r in records:
        if r.pod not in counted:
            problems.append(f"{r.pod}: the kubelet on {r.node} rejected it, not counted")
    return problems


def misalignment_reports(outcome: Outcome) -> list[str]:
    """Where the exporter's report of misaligned pods (its metric and its Events) differs
    from what the kubelets hold (empty: it names exactly the misaligned pods)."""
    truth = set(outcome.misaligned)
    problems = []
    for what, named in (
        ("metric", outcome.misaligned_metric),
        ("DRAMisaligned Events", outcome.misaligned_events),
    ):
        if named is None:
            continue
        problems += [
            f"{pod}: runs misaligned ({'; '.join(outcome.misaligned[pod])}), not in the "
            f"exporter's {what}"
            for pod in sorted(truth - named)
        ]
        problems += [
            f"{pod}: aligned, named by the exporter's {what}" for pod in sorted(named - truth)
        ]
    return problems


def harness_problems(outcome: Outcome) -> list[str]:
    """What the harness itself got wrong in this run (empty: nothing): rejections that
    are not the kubelet's, resources held twice, an exporter or NRT that never caught
    up, an exporter misreporting which pods run misaligned. Never the scheduler's
    doing."""
    return [
        *unrecorded_rejections(outcome),
        *(f"held twice: {p}" for p in outcome.double_allocations),
        *(f"exporter: {p}" for p in outcome.observation_mismatches),
        *(f"NRT of {n} did not converge" for n in outcome.nrt_mismatches),
        *(f"exporter: {p}" for p in misalignment_reports(outcome)),
    ]


# ---- predictions ---------------------------------------------------------------------


@dataclass(frozen=True)
class PredictionAgreement:
    """How a scheduler's predicted placements compare with the kubelet's allocations, over
    the admitted workload pods carrying a prediction."""

    predicted: int
    #: Same zones for every resource but memory (what the kubelet pinned CPUs and devices to).
    zones_agree: int
    #: The whole annotation as the kubelet's allocation amounts to it (interfaces.md),
    #: memory and memory groups included.
    exact: int
    #: Pods whose prediction is not exact: ``name (zones|amounts differ): predicted ...
    #: kubelet ...``.
    mismatches: tuple[str, ...] = ()

    @property
    def ratio(self) -> float | None:
        return round(self.zones_agree / self.predicted, 3) if self.predicted else None


def _zones_by_resource(zones: Iterable[ZonePlacement]) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for z in zones:
        for res, amount in z.amounts.items():
            if amount and res != "memory" and not res.startswith("hugepages-"):
                out.setdefault(res, set()).add(z.numa_id)
    return {r: frozenset(s) for r, s in out.items()}


def prediction_agreement(outcome: Outcome) -> PredictionAgreement:
    """Predicted (``kai.scheduler/numa-placement-predicted``) vs. what the kubelet
    allocated, for every admitted workload pod that carries a prediction. A prediction
    that does not parse counts as a mismatch."""
    profiles = outcome.profile_of_node()
    predicted = zones_agree = exact = 0
    mismatches: list[str] = []
    for pod in outcome.workload_pods():
        raw = annotations_of(pod).get(PREDICTED_PLACEMENT)
        name = name_of(pod)
        allocation = outcome.allocations.get(name)
        profile = profiles.get(node_of(pod) or "")
        if raw is None or allocation is None or profile is None:
            continue
        predicted += 1
        per_zone, groups = zone_amounts(profile, allocation)
        actual = tuple(ZonePlacement(z, a) for z, a in per_zone.items())
        try:
            guess = parse_placement(raw)
            raw_groups = annotations_of(pod).get(PREDICTED_MEMORY_GROUPS)
            guess_groups = parse_memory_groups(raw_groups) if raw_groups is not None else None
        except AnnotationFormatError as exc:
            mismatches.append(f"{name}: unreadable prediction ({exc})")
            continue
        same_zones = _zones_by_resource(guess) == _zones_by_resource(actual)
        zones_agree += same_zones
        same_groups = guess_groups is None or format_memory_groups(
            guess_groups
        ) == format_memory_groups(MemoryGroup(n, a) for n, a in groups.items())
        if format_placement(guess) == format_placement(actual) and same_groups:
            exact += 1
        else:
            what = "amounts differ" if same_zones else "zones differ"
            mismatches.append(
                f"{name} ({what}): predicted {format_placement(guess)} "
                f"kubelet {format_placement(actual)}"
            )
    return PredictionAgreement(predicted, zones_agree, exact, tuple(mismatches))


# ---- GPUs ----------------------------------------------------------------------------

GPU = "nvidia.com/gpu"
#: DRA drivers whose devices are GPUs (profiles' known GPU drivers, docs/profiles.md).
DRA_GPU_DRIVERS = frozenset({"gpu.nvidia.com", "gpu.amd.com"})


def gpus_in_use(outcome: Outcome) -> int:
    """GPUs the kubelets hold at the end for workload pods (Running or starting):
    device-plugin GPUs, and DRA GPUs of Running pods."""
    total = 0
    for pod in outcome.workload_pods():
        allocation = outcome.allocations.get(name_of(pod))
        if allocation is None or phase(pod) not in ("Pending", "Running"):
            continue
        total += sum(len(c.devices.get(GPU, ())) for c in allocation.containers)
        total += len(
            {
                (r.driver, r.pool, r.device)
                for c in allocation.containers
                for claim in c.dynamic
                for r in claim.resources
                if r.driver in DRA_GPU_DRIVERS
            }
        )
    return total


def deleted_as_seen(
    last_seen: Mapping[str, Any], events: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """A pod someone deleted, as last seen; if its kubelet rejected it (its event for the
    pod's uid says so) before the harness saw that status, with the rejection's status."""
    pod = dict(last_seen)
    if phase(pod) in ("Succeeded", "Failed"):
        return pod
    uid = str((pod.get("metadata") or {}).get("uid") or "")
    node = node_of(pod)
    if any(
        r.pod == name_of(pod) and r.uid == uid and r.node == node
        for r in kubelet_rejections(events)
    ):
        pod["status"] = {
            **(pod.get("status") or {}),
            "phase": "Failed",
            "reason": TOPOLOGY_AFFINITY_ERROR,
            "message": "Pod was rejected: (the kubelet's event; the pod was deleted since)",
        }
    return pod
