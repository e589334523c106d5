"""What happened to each pod of one strategy's run: typed values. Pure.

The engine (:mod:`fakenrt.simulate.engine`) records one :class:`PodOutcome` per workload
pod that arrived before the horizon, and one :class:`Rejection` per pod object a kubelet
rejected; :class:`Outcomes` carries both on the run's
:class:`~fakenrt.simulate.metrics.StrategyResult`. A workload pod is the user's pod: when
a kubelet rejects it, the workload's controller re-creates it as a new Pod object named
``<name>-r<n>`` (at most ``maxRequeues`` times), and all those objects belong to the one
workload pod (``attempts`` counts them).

Fates at the horizon (:attr:`PodOutcome.fate`):

* :data:`COMPLETED` - it ran for its whole duration and Succeeded;
* :data:`RUNNING` - Running at the horizon;
* :data:`STARTING` - admitted by its kubelet, its containers not started yet (only with a
  ``startDelay``);
* :data:`PENDING` - waiting for a node at the horizon: never bound (``binds == 0``: never
  placed), or re-created after a rejection and not bound again;
* :data:`DROPPED` - rejected by a kubelet and not re-created (``--no-requeue``, or
  ``maxRequeues`` re-creations used up).

Times are seconds of simulated time from the start of the run.
"""

from __future__ import annotations

from dataclasses import dataclass

COMPLETED = "completed"
RUNNING = "running"
STARTING = "starting"
PENDING = "pending"
DROPPED = "dropped"
FATES = (COMPLETED, RUNNING, STARTING, PENDING, DROPPED)


@dataclass(frozen=True, slots=True)
class Rejection:
    """A kubelet refused a bound pod at admission."""

    #: Index of the workload pod in the scenario's workload (``Scenario.workload``).
    item: int
    #: ``namespace/name`` of the rejected Pod object (``<name>-r<n>`` once re-created).
    pod: str
    node: str
    at: float
    #: The kubelet's reason (``status.reason``): ``TopologyAffinityError``, ``OutOfcpu``...
    reason: str
    #: The kubelet's message (``status.message``, ``Pod was rejected: ...``).
    message: str


@dataclass(frozen=True, slots=True)
class PodOutcome:
    """One workload pod, from its arrival to the horizon."""

    #: Index in the scenario's workload (``Scenario.workload``): its class, run time,
    #: priority and manifest are there.
    item: int
    #: ``namespace/name`` of the workload pod (its first Pod object).
    pod: str
    arrived: float
    fate: str
    #: GPUs the pod requests.
    gpus: int
    #: Pod objects created for it: 1 + the re-creations after rejections.
    attempts: int
    #: Times a Pod object of it was bound to a node.
    binds: int
    #: The node of its last bind ("" when never bound).
    node: str = ""
    #: When it was first bound (None: never).
    first_bound: float | None = None
    #: When the object that ran started Running (None: never ran).
    started: float | None = None
    #: When it Succeeded (None: it did not).
    finished: float | None = None
    #: GPU-seconds it held while Running, up to the horizon.
    gpu_seconds: float = 0.0
    #: The NUMA zones its kubelet gave the object it last bound, ascending (what its CPUs,
    #: NUMA-affine devices and memory blocks sit on); empty when that object was not
    #: admitted, or holds nothing NUMA-bound.
    zones: tuple[int, ...] = ()

    @property
    def never_placed(self) -> bool:
        """Waiting at the horizon without ever having been bound."""
        return self.binds == 0


@dataclass(frozen=True)
class Outcomes:
    """Every workload pod that arrived (in workload order) and every rejection (in the
    order they happened)."""

    pods: tuple[PodOutcome, ...] = ()
    rejections: tuple[Rejection, ...] = ()

    def count(self, fate: str) -> int:
        return sum(1 for p in self.pods if p.fate == fate)

    @property
    def never_placed(self) -> int:
        return sum(1 for p in self.pods if p.never_placed)
