"""The scheduling strategies compared: configurations of the one reference scheduler
(:class:`fakenrt.scheduler.cycle.SchedulingCycle` with :class:`NumaPlugin`), differing
only in the plugin arguments, the in-cycle reservation and what the cycle's snapshot
shows. Pure.

* ``numa-blind`` - no NRT in the snapshot: whole-node fit only (the default
  kube-scheduler; ties go to the first node by name).
* ``nrt-trust`` - NUMA filter on the published (lagged) NRT ``available``; no reservation,
  so pods of one cycle do not see each other.
* ``nrt-reserve`` - the same NRT, with the in-cycle reservation; NRT is trusted across
  cycles.
* ``reconstruct-predicted`` - Appendix A from the scheduler's own predicted annotations
  only (the exporter's observed ones are hidden).
* ``reconstruct-observed`` - Appendix A as the KAI design has it: observed annotations,
  else predicted.
* ``oracle`` - the NRT is the simulated kubelet's true state at the cycle (no lag), with
  the reservation: the limit no scheduler can beat.
"""

from __future__ import annotations

from dataclasses import dataclass

from fakenrt.scheduler.args import PluginArgs

#: What the cycle's snapshot carries as a node's NRT.
VIEW_NONE, VIEW_PUBLISHED, VIEW_TRUTH = "none", "published", "truth"
#: Which placement annotations of the pods the scheduler sees.
SEES_NONE, SEES_PREDICTED, SEES_ALL = "none", "predicted", "all"


@dataclass(frozen=True, kw_only=True)
class Strategy:
    name: str
    view: str
    reconstruct: bool
    reserve: bool
    sees: str
    #: It writes the predicted annotation on the pods it binds.
    predicts: bool
    summary: str

    def plugin_args(self, base: PluginArgs) -> PluginArgs:
        return PluginArgs(
            ignore_list=base.ignore_list,
            reconstruct_available=self.reconstruct,
            scoring_strategy=base.scoring_strategy,
            prefer_closest_numa_nodes=base.prefer_closest_numa_nodes,
        )

    @property
    def orders_admissions(self) -> bool:
        """It keeps a pod off a node's zones while a pod of the pod's second bound there in
        the same cycle awaits admission (the reference loop's rule,
        :mod:`fakenrt.scheduler.admission_order`). Not ``nrt-trust``, which stands for a
        scheduler without the in-cycle reservation, nor the oracle, which knows each pod is
        admitted as it is bound."""
        return self.reserve and self.view != VIEW_TRUTH

    @property
    def reads_lagged_nrt(self) -> bool:
        """It trusts NRT ``available`` as published (the stale window matters)."""
        return self.view == VIEW_PUBLISHED and not self.reconstruct


STRATEGIES: tuple[Strategy, ...] = (
    Strategy(
        name="numa-blind",
        view=VIEW_NONE,
        reconstruct=False,
        reserve=True,
        sees=SEES_NONE,
        predicts=False,
        summary="whole-node fit only (default kube-scheduler)",
    ),
    Strategy(
        name="nrt-trust",
        view=VIEW_PUBLISHED,
        reconstruct=False,
        reserve=False,
        sees=SEES_NONE,
        predicts=True,
        summary="NUMA filter on lagged NRT available, no reservation",
    ),
    Strategy(
        name="nrt-reserve",
        view=VIEW_PUBLISHED,
        reconstruct=False,
        reserve=True,
        sees=SEES_NONE,
        predicts=True,
        summary="lagged NRT available + in-cycle reservation",
    ),
    Strategy(
        name="reconstruct-predicted",
        view=VIEW_PUBLISHED,
        reconstruct=True,
        reserve=True,
        sees=SEES_PREDICTED,
        predicts=True,
        summary="free zones rebuilt from predicted placements",
    ),
    Strategy(
        name="reconstruct-observed",
        view=VIEW_PUBLISHED,
        reconstruct=True,
        reserve=True,
        sees=SEES_ALL,
        predicts=True,
        summary="free zones rebuilt from observed, else predicted placements (KAI default)",
    ),
    Strategy(
        name="oracle",
        view=VIEW_TRUTH,
        reconstruct=False,
        reserve=True,
        sees=SEES_NONE,
        predicts=True,
        summary="the kubelet's true state, no lag: the upper bound",
    ),
)

BY_NAME = {s.name: s for s in STRATEGIES}
NAMES = tuple(BY_NAME)
ORACLE = "oracle"
