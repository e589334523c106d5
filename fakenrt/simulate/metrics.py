"""What one strategy's run measured, and the figures derived from it. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fakenrt.simulate.outcomes import Outcomes

TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"


@dataclass
class Recorder:
    """Counters a run updates as it goes."""

    binds: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    requeued: int = 0
    dropped: int = 0
    completed: int = 0
    unschedulable_attempts: int = 0
    cycles: int = 0
    gpu_seconds: float = 0.0
    pending_times: list[float] = field(default_factory=list)
    utilization: list[tuple[float, float]] = field(default_factory=list)
    stranded: list[tuple[float, int]] = field(default_factory=list)
    compared: int = 0
    agreed: int = 0
    nrt_reads: int = 0
    stale_reads: int = 0
    stale_age_sum: float = 0.0
    stale_age_max: float = 0.0


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


@dataclass(frozen=True)
class StrategyResult:
    """One strategy's figures (the JSON of ``fakenrt simulate``)."""

    strategy: str
    figures: Mapping[str, Any]
    #: (seconds, GPU utilization 0..1) samples.
    utilization: tuple[tuple[float, float], ...]
    #: (seconds, stranded GPUs) samples.
    stranded: tuple[tuple[float, int], ...]
    #: Pending times (bind minus creation, seconds), sorted; for the distribution chart.
    pending_times: tuple[float, ...]
    #: Every workload pod's fate and every rejection (not in ``figures``).
    outcomes: Outcomes = field(default_factory=Outcomes)

    def figure(self, name: str) -> Any:
        return self.figures[name]


def per_thousand(count: int, binds: int) -> float:
    return round(1000.0 * count / binds, 3) if binds else 0.0


def summarize(
    strategy: str,
    rec: Recorder,
    *,
    total_gpus: int,
    horizon: float,
    pending_at_end: int,
    running_at_end: int,
    reads_lagged_nrt: bool,
    predicts: bool,
    outcomes: Outcomes | None = None,
    dra: Mapping[str, Any] | None = None,
) -> StrategyResult:
    """The figures of one run; ``dra``: the DRA mode's (:mod:`fakenrt.simulate.dra`)."""
    tae = rec.failures.get(TOPOLOGY_AFFINITY_ERROR, 0)
    other = sum(n for reason, n in rec.failures.items() if reason != TOPOLOGY_AFFINITY_ERROR)
    stranded = [s for _, s in rec.stranded]
    figures: dict[str, Any] = {
        "binds": rec.binds,
        "topology_affinity_errors": tae,
        "topology_affinity_errors_per_1000_binds": per_thousand(tae, rec.binds),
        "other_admission_failures": other,
        "other_admission_failures_per_1000_binds": per_thousand(other, rec.binds),
        "admission_failures_by_reason": dict(sorted(rec.failures.items())),
        "requeued": rec.requeued,
        "dropped": rec.dropped,
        "completed": rec.completed,
        "running_at_end": running_at_end,
        "pending_at_end": pending_at_end,
        "unschedulable_attempts": rec.unschedulable_attempts,
        "scheduling_cycles": rec.cycles,
        "gpu_hours": round(rec.gpu_seconds / 3600.0, 3),
        "gpu_utilization": _r(rec.gpu_seconds / (total_gpus * horizon), 4)
        if total_gpus and horizon
        else 0.0,
        "stranded_gpus_mean": _r(sum(stranded) / len(stranded), 3) if stranded else 0.0,
        "stranded_gpus_max": max(stranded) if stranded else 0,
        "pending_seconds_p50": _r(percentile(rec.pending_times, 50)),
        "pending_seconds_p99": _r(percentile(rec.pending_times, 99)),
        "placement_agreement": _r(rec.agreed / rec.compared, 4)
        if predicts and rec.compared
        else None,
        "placements_compared": rec.compared if predicts else 0,
    }
    if reads_lagged_nrt:
        figures["stale_nrt_read_share"] = (
            _r(rec.stale_reads / rec.nrt_reads, 4) if rec.nrt_reads else 0.0
        )
        figures["stale_nrt_age_mean_seconds"] = (
            _r(rec.stale_age_sum / rec.stale_reads) if rec.stale_reads else 0.0
        )
        figures["stale_nrt_age_max_seconds"] = _r(rec.stale_age_max)
    if dra is not None:
        figures.update(dra)
    return StrategyResult(
        strategy=strategy,
        figures=figures,
        utilization=tuple((round(t, 3), round(u, 4)) for t, u in rec.utilization),
        stranded=tuple((round(t, 3), s) for t, s in rec.stranded),
        pending_times=tuple(sorted(round(p, 3) for p in rec.pending_times)),
        outcomes=outcomes if outcomes is not None else Outcomes(),
    )
