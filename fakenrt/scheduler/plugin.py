"""The reference NUMA scheduler plugin: filter, placement and scores for one pod on one
node. Pure: it reads a node's :class:`NumaTopology` and :class:`ZoneLedger` and never
changes them; the caller charges the returned placement to reserve it.

Filter, in order:

1. no NRT for the node -> pass; a Guaranteed pod whose memory request is not a whole
   number of bytes on a node whose Memory Manager aligns memory -> fail, whatever the
   policy (the kubelet's Memory Manager fails it: ``UnexpectedAdmissionError``); policy
   ``none`` / ``best-effort`` -> pass (the kubelet never rejects on topology grounds there)
   unless the Memory Manager's own allocation without NUMA affinity fails;
2. the pod's admission steps over the NUMA-relevant resources (reported per zone, minus
   ``ignoreList``, gated by QoS as the kubelet gates them); nothing to align -> pass;
3. pods on the node hold exclusive resources at zones nobody reported (no placement
   annotation, NRT not current: ``ZoneLedger.unaccounted``) -> fail as *deferred*: the
   free zones are unknown, so a NUMA-sensitive pod waits (seed 000, Appendix A caveats);
4. the node's evaluator (``single_numa_node`` / ``restricted``) decides and names the
   placement the reservation charges.

Scores (all four, each 0..100) rank accepted nodes. On ``best-effort`` and ``none`` nodes
the placement scored is the one an aligned admission would get. LeastNUMANodes scores
nodes of every policy by the zones the pod needs. A pod that cannot be aligned on a
``best-effort`` node scores 0 there on every other strategy, steering it toward nodes
where the kubelet's best-effort alignment will succeed (on ``none`` nodes the kubelet
aligns nothing, so there is nothing to steer by).
Scores never change the filter's verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from fakenrt.podspec import PodSpec
from fakenrt.scheduler.alignment import memory_without_affinity
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.evaluator import evaluator_for
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.placement import EMPTY_PLACEMENT, Placement
from fakenrt.scheduler.requests import AlignmentUnit, alignment_units, memory_failure
from fakenrt.scheduler.restricted import RestrictedEvaluator
from fakenrt.scheduler.scoring import LEAST_NUMA_NODES, MIN_SCORE, STRATEGIES, ScoreInput
from fakenrt.scheduler.topology import POLICY_BEST_EFFORT, SCOPE_POD, NumaTopology


@dataclass(frozen=True)
class FilterResult:
    """``fit``: the node passes. ``engaged``: the plugin evaluated the pod (False = passed
    through). ``placement``: what the reservation charges (empty when passed through).
    ``units``: the pod's admission steps on this node, when the filter computed them (so
    scoring does not compute them again)."""

    fit: bool
    reason: str | None = None
    placement: Placement = EMPTY_PLACEMENT
    engaged: bool = False
    units: tuple[AlignmentUnit, ...] = ()


@dataclass(frozen=True)
class Scores:
    values: Mapping[str, int] = field(default_factory=dict)

    def __getitem__(self, name: str) -> int:
        return self.values[name]


MEMORY_MANAGER = "memory manager"


def deferred_reason(pods: tuple[str, ...]) -> str:
    """Why a NUMA-sensitive pod is deferred on a node whose free zones are unknown."""
    more = f" and {len(pods) - 1} more" if len(pods) > 1 else ""
    return (
        f"deferred: pod {pods[0]}{more} on the node hold(s) exclusive resources at zones "
        "no placement annotation reports and NRT is not current"
    )


class NumaPlugin:
    def __init__(self, args: PluginArgs | None = None) -> None:
        self.args = args or PluginArgs()

    def units(self, pod: PodSpec, topology: NumaTopology) -> tuple[AlignmentUnit, ...]:
        return alignment_units(
            pod,
            reported=topology.reported,
            ignore=self.ignored(topology),
            pod_scope=topology.scope == SCOPE_POD,
        )

    def ignored(self, topology: NumaTopology) -> frozenset[str]:
        """Resources not aligned on the node: ``ignoreList`` plus what the NRT says its CPU
        / Memory Manager does not align."""
        return self.args.ignore_list | topology.unaligned

    def filter(
        self, pod: PodSpec, topology: NumaTopology | None, ledger: ZoneLedger | None
    ) -> FilterResult:
        if topology is None or ledger is None:
            return FilterResult(fit=True)
        failure = memory_failure(pod, reported=topology.reported, ignore=self.ignored(topology))
        if failure is not None:
            return FilterResult(fit=False, reason=failure, engaged=True)
        evaluator = evaluator_for(
            topology.policy, prefer_closest=self.args.prefer_closest_numa_nodes
        )
        if evaluator is None:
            # No topology rejection here, but the Memory Manager still allocates (and can
            # fail: UnexpectedAdmissionError) when it aligns memory.
            units = self.units(pod, topology)
            memory = any(u.memory or u.container_memory for u in units)
            if memory and ledger.unaccounted:
                reason = deferred_reason(ledger.unaccounted)
                return FilterResult(fit=False, reason=reason, engaged=True, units=units)
            problem = self._memory_problem(topology, ledger, units) if memory else None
            if problem is not None:
                return FilterResult(fit=False, reason=problem, engaged=True, units=units)
            return FilterResult(fit=True, units=units)
        units = self.units(pod, topology)
        if all(u.empty for u in units):
            return FilterResult(fit=True, units=units)
        if ledger.unaccounted:
            return FilterResult(
                fit=False, reason=deferred_reason(ledger.unaccounted), engaged=True, units=units
            )
        evaluation = evaluator.evaluate(ledger, units)
        return FilterResult(
            fit=evaluation.fit,
            reason=evaluation.reason,
            placement=evaluation.placement,
            engaged=True,
            units=units,
        )

    def _memory_problem(
        self, topology: NumaTopology, ledger: ZoneLedger, units: tuple[AlignmentUnit, ...]
    ) -> str | None:
        """Why the Memory Manager fails the pod on a ``none`` / ``best-effort`` node, or
        None. ``none``: no NUMA affinity for any container (exact). ``best-effort``: when a
        preferred merged hint exists it is the one ``restricted`` picks, and the Memory
        Manager's allocation inside it decides; when none exists the kubelet's choice among
        non-preferred hints is not modelled and the pod passes (an approximation)."""
        if topology.policy != POLICY_BEST_EFFORT:
            return memory_without_affinity(ledger, units)
        aligned = RestrictedEvaluator(prefer_closest=self.args.prefer_closest_numa_nodes)
        evaluation = aligned.evaluate(ledger, units)
        if not evaluation.fit and (evaluation.reason or "").startswith(MEMORY_MANAGER):
            return evaluation.reason
        return None

    def score(
        self,
        pod: PodSpec,
        topology: NumaTopology | None,
        ledger: ZoneLedger | None,
        result: FilterResult,
        *,
        strategies: Iterable[str] | None = None,
    ) -> Scores:
        """The scores of a node that passed the filter: every strategy's, or only those of
        ``strategies`` (the loop ranks by one)."""
        names = tuple(STRATEGIES) if strategies is None else tuple(strategies)
        if topology is None or ledger is None or not result.fit:
            return Scores(dict.fromkeys(names, MIN_SCORE))
        units = result.units or self.units(pod, topology)
        placement = result.placement
        if not result.engaged and not all(u.empty for u in units):
            aligned = self.aligned_placement(units, ledger)
            if aligned is not None:
                placement = aligned
            elif topology.policy == POLICY_BEST_EFFORT:
                # Steering: best-effort alignment would fail here, so every strategy but
                # LeastNUMANodes scores 0; LeastNUMANodes still scores by the zones the pod
                # needs (seed 001: it scores nodes of every policy).
                inp = ScoreInput(ledger=ledger, units=units, placement=EMPTY_PLACEMENT)
                return Scores(
                    {
                        name: STRATEGIES[name](inp) if name == LEAST_NUMA_NODES else MIN_SCORE
                        for name in names
                    }
                )
        inp = ScoreInput(ledger=ledger, units=units, placement=placement)
        return Scores({name: STRATEGIES[name](inp) for name in names})

    @staticmethod
    def aligned_placement(units: tuple[AlignmentUnit, ...], ledger: ZoneLedger) -> Placement | None:
        """The placement an aligned admission would get (a preferred hint for every step,
        which is also what ``best-effort`` picks when one exists); None when there is none."""
        aligned = RestrictedEvaluator().evaluate(ledger, units)
        return aligned.placement if aligned.fit else None

    def placement_to_charge(
        self,
        pod: PodSpec,
        topology: NumaTopology | None,
        ledger: ZoneLedger | None,
        result: FilterResult,
    ) -> Placement:
        """What the loop reserves for a pod it binds: the evaluator's placement; on a
        ``best-effort`` node the aligned placement the kubelet will pick when it can align
        the pod (nothing when it cannot: never guess)."""
        if result.engaged or topology is None or ledger is None:
            return result.placement
        if topology.policy != POLICY_BEST_EFFORT:
            return result.placement
        units = result.units or self.units(pod, topology)
        if all(u.empty for u in units):
            return result.placement
        return self.aligned_placement(units, ledger) or result.placement
