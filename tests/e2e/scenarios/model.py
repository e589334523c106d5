"""What an e2e scenario is, as data: fake nodes, the pods submitted, the steps between
them, and the check a correct NUMA-aware scheduler passes. Pure.

One definition per scenario serves the pytest suite (which asserts its check) and the
scorecard (which reports it, for every scheduler and variant). The driver
(tests/e2e/driver.py) runs the steps on a deployment and returns an
:class:`~tests.e2e.outcome.Outcome`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from schedulers.adapter import Adapter, Claim
from tests.e2e.variants import LAG_NONE, Lag, Variant

if TYPE_CHECKING:
    from tests.e2e.outcome import Outcome


@dataclass(frozen=True, kw_only=True)
class PodTemplate:
    """One pod a scenario submits (tests/e2e/cluster.py ``workload_pod``)."""

    name: str
    cpu: str
    memory: str = "256Mi"
    gpus: int = 0
    guaranteed: bool = True
    #: It finishes after this long (e.g. ``4s``); None: it runs until deleted.
    run_duration: str | None = None
    #: Bound directly to the scenario's node of this index (``spec.nodeName``, no scheduler,
    #: no placement record); None: the scheduler under test places it.
    node: int | None = None
    #: Seconds to wait (pacing, not waiting for an outcome) before submitting it.
    delay_s: float = 0.0
    #: GPUs asked for through Dynamic Resource Allocation: a request of the pod's own
    #: ResourceClaim (``<pod>-claim``) for that many devices of the ``gpu.nvidia.com``
    #: DeviceClass, beside the container's ``cpu`` (the kubelet's exclusive CPUs).
    dra_gpus: int = 0
    #: CPUs asked for through DRA too: a request of the same claim for a ``dra.cpu`` device
    #: consuming this many CPUs of its capacity (the CPU driver, docs/profiles.md).
    dra_cpus: int = 0
    #: A ``matchAttribute: resource.kubernetes.io/numaNode`` constraint over the claim's
    #: requests: the allocator must take every device from one NUMA node.
    same_numa_node: bool = False
    #: The claim comes from a ResourceClaimTemplate (``<pod>-claim``), as a Job's or a
    #: Deployment's pods' do: the resourceclaim controller makes the pod's claim from it
    #: and names it in the pod's status; else the pod names its ResourceClaim itself.
    claim_template: bool = False

    @property
    def prebound(self) -> bool:
        return self.node is not None

    @property
    def claims(self) -> bool:
        """It uses a ResourceClaim."""
        return bool(self.dra_gpus or self.dra_cpus)


@dataclass(frozen=True)
class Submit:
    """Create these pods, in order, each after its ``delay_s``."""

    pods: tuple[PodTemplate, ...]


@dataclass(frozen=True)
class AwaitDecided:
    """Until the scheduler has decided about ``pod``: bound, or reported unschedulable."""

    pod: str


@dataclass(frozen=True)
class AwaitBound:
    """Until at least ``count`` of the submitted pods are bound."""

    count: int


@dataclass(frozen=True)
class AwaitBaseline:
    """Until ``pods`` (bound directly) run, are observed (when the exporter runs), and every
    node's NRT shows them: the same start for every scheduler."""

    pods: tuple[str, ...]


@dataclass(frozen=True)
class KillController:
    """SIGKILL the simulated kubelets' controller."""


@dataclass(frozen=True)
class RestartController:
    """Start it again; it rebuilds its state from the API."""


Step = Submit | AwaitDecided | AwaitBound | AwaitBaseline | KillController | RestartController
Check = Callable[["Outcome"], list[str]]


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """One scenario: its nodes (made afresh per run: node names are unique), the steps, and
    what a correct NUMA-aware scheduler achieves (``check``: the problems, empty when
    none)."""

    id: str
    title: str
    nodes: Callable[[], tuple[dict[str, Any], ...]]
    steps: tuple[Step, ...]
    check: Check
    #: The claim of a scheduler (schedulers/adapter.py) that ``check`` holds it to:
    #: ``aligned`` without NRT lag, ``lag-safe`` under lag.
    claim: Claim = Claim.ALIGNED
    #: The variant the pytest suite runs and the scorecard's CI part runs first.
    default_variant: Variant = field(default_factory=lambda: Variant(exporter=True, lag=LAG_NONE))
    controller_args: tuple[str, ...] = ()
    #: Nothing on the nodes changes while the scheduler decides (no pod finishes, no
    #: kubelet restarts), so a predicted placement can be exact.
    predictable: bool = True
    #: Every pod left unbound here fits some node as a whole, but no zone: the
    #: scheduler's report must give its NUMA reason (elsewhere any report will do).
    numa_reason: bool = False
    #: A NUMA-blind scheduler (whole-node accounting) is forced into at least one
    #: TopologyAffinityError here by the arithmetic of the nodes and pods.
    blind_scheduler_fails: bool = False
    #: Bounds of the driver's waits (seconds): each await step, and settling at the end.
    step_timeout_s: float = 60.0
    settle_timeout_s: float = 120.0
    #: Figures a reader needs about this run of the scenario (e.g. the churn's length).
    parameters: Mapping[str, Any] = field(default_factory=dict)
    #: Its pods use ResourceClaims: only a scheduler that allocates claims
    #: (``Adapter.allocates_claims``) can place them.
    needs_claims: bool = False

    @property
    def pods(self) -> tuple[PodTemplate, ...]:
        return tuple(p for step in self.steps if isinstance(step, Submit) for p in step.pods)

    @property
    def workload(self) -> tuple[str, ...]:
        """The pods the scheduler under test places."""
        return tuple(p.name for p in self.pods if not p.prebound)

    @property
    def prebound(self) -> tuple[str, ...]:
        """The pods bound without any scheduler."""
        return tuple(p.name for p in self.pods if p.prebound)

    def not_applicable(self, scheduler: Adapter) -> str | None:
        """Why ``scheduler`` cannot be asked this scenario's question (None: it can)."""
        if self.needs_claims and not scheduler.allocates_claims:
            return (
                f"{scheduler.id} does not allocate ResourceClaims (allocates_claims), "
                f"scenario {self.id}'s pods use them"
            )
        return None


def with_lag(nodes: tuple[dict[str, Any], ...], lag: Lag) -> tuple[dict[str, Any], ...]:
    """The nodes with every node's NRT lag set to ``lag`` (other ``nrt`` keys kept)."""
    out = []
    for node in nodes:
        nrt = dict(node.get("nrt") or {})
        nrt.update(delay=lag.delay, jitter=lag.jitter)
        out.append({**node, "nrt": nrt})
    return tuple(out)
