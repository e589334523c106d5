"""The results of a ``fakenrt simulate`` run as one JSON-ready document. Pure; the same
inputs and seeds give byte-identical JSON (keys sorted, floats rounded).

The document (``--json``):

* ``scenario`` - what ran: the files (``scenario``, ``profiles``, ``trace``), the workload,
  the node shapes and pod classes, every setting, and ``as_run`` - the scenario in the
  file's spelling, runnable as it stands;
* ``strategy_order``, ``best`` (the strategy that delivered the most GPU-hours);
* ``strategies`` - per strategy the figures of :mod:`fakenrt.simulate.metrics`, the pods'
  fates, ``gpu_hours_lost`` against the best, and the breakdowns ``by_node_shape`` and
  ``by_pod_class`` (:mod:`fakenrt.simulate.breakdown`);
* ``never_admissible`` - pods no node shape's kubelet admits (:mod:`.admissible`);
* ``series`` - utilization, stranded GPUs and pending-time quantiles over time;
* ``seeds`` - with several seeds, the main figures' means and 95% intervals over them;
* ``sweep`` - with ``--sweep``, the figures at every value (means and intervals over the
  seeds).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fakenrt.simulate.admissible import never_admissible
from fakenrt.simulate.breakdown import by_node_shape, by_pod_class, fates, node_shapes
from fakenrt.simulate.metrics import StrategyResult, percentile
from fakenrt.simulate.scenario import Scenario
from fakenrt.simulate.stats import INTERVAL, estimate
from fakenrt.simulate.strategies import BY_NAME, ORACLE

#: Quantiles of the pending-time distribution kept in the JSON (0, 5, ..., 95, 99 %).
QUANTILES = (*range(0, 100, 5), 99)
#: The figures given over seeds and sweep values (means and intervals).
SEED_FIGURES = (
    "topology_affinity_errors_per_1000_binds",
    "other_admission_failures_per_1000_binds",
    "gpu_hours",
    "gpu_hours_lost",
    "completed",
    "never_placed",
    "waiting_after_rejection",
    "dropped",
)


@dataclass(frozen=True)
class SweepPoint:
    value: float
    #: Per seed (in the order of the seeds), the results in strategy order.
    seeds: tuple[tuple[StrategyResult, ...], ...]


def _quantiles(values: Sequence[float]) -> list[list[float]]:
    if not values:
        return []
    out = []
    for q in QUANTILES:
        v = values[0] if q == 0 else percentile(values, q)
        out.append([float(q), round(float(v or 0.0), 3)])
    return out


def as_run(scenario: Scenario) -> dict[str, Any]:
    """The scenario that ran, in the scenario file's spelling (paths as given; settings
    in seconds): a file with this content runs the same simulation."""
    s, d = scenario.settings, scenario.description
    counts: dict[str, int] = {}
    for node in scenario.nodes:
        shape = scenario.profile_of(node.name)
        counts[shape] = counts.get(shape, 0) + 1
    workload: dict[str, Any]
    if scenario.generator is not None:
        g = scenario.generator
        workload = {
            "generate": {
                "mix": g.mix,
                "duration": g.duration,
                "arrivalsPerHour": g.arrivals_per_hour,
                "namespace": g.namespace,
            }
        }
    else:
        workload = {"trace": d.get("trace", "(built in memory)")}
    plugin: dict[str, Any] = {
        "ignoreList": sorted(s.plugin.ignore_list),
        "preferClosestNUMANodes": s.plugin.prefer_closest_numa_nodes,
    }
    settings: dict[str, Any] = {
        "nrtDelay": s.nrt_delay,
        "nrtJitter": s.nrt_jitter,
        "exporterDelay": s.exporter_delay,
        "period": s.period,
        "requeue": s.requeue,
        "maxRequeues": s.max_requeues,
        "startDelay": s.start_delay,
        "duration": scenario.horizon,
        "seed": s.seed,
        "score": s.plugin.scoring_strategy,
        "pluginArgs": plugin,
    }
    if s.dra:
        settings["dra"] = True
    return {
        "profiles": d.get("profiles", "(built in memory)"),
        "nodes": [{"profile": name, "count": n} for name, n in counts.items()],
        "workload": workload,
        "settings": settings,
    }


def scenario_summary(scenario: Scenario) -> dict[str, Any]:
    s = scenario.settings
    classes: dict[str, int] = {}
    for item in scenario.workload:
        classes[item.pod_class] = classes.get(item.pod_class, 0) + 1
    shapes = node_shapes(scenario)
    labels: dict[str, str] = {}
    for node in scenario.nodes:
        k = node.kubelet
        labels.setdefault(
            scenario.profile_of(node.name),
            f"{len(node.zones)}-zone {k.topology_manager_policy}/{k.topology_manager_scope}",
        )
    summary: dict[str, Any] = {
        **dict(scenario.description),
        "nodes": len(scenario.nodes),
        "node_shapes": [{**row, "kubelet": labels[row["node_shape"]]} for row in shapes],
        "pod_classes": [{"pod_class": c, "pods": n} for c, n in classes.items()],
        "gpus": sum(row["gpus"] for row in shapes),
        "pods": len(scenario.workload),
        "horizon_seconds": round(scenario.horizon, 3),
        "as_run": as_run(scenario),
        "settings": {
            "nrt_delay_seconds": s.nrt_delay,
            "nrt_jitter_seconds": s.nrt_jitter,
            "exporter_delay_seconds": s.exporter_delay,
            "scheduling_period_seconds": s.period,
            "start_delay_seconds": s.start_delay,
            "requeue": s.requeue,
            "max_requeues": s.max_requeues,
            "seed": s.seed,
            "score": s.plugin.scoring_strategy,
            "ignore_list": sorted(s.plugin.ignore_list),
            "prefer_closest_numa_nodes": s.plugin.prefer_closest_numa_nodes,
        },
    }
    if s.dra:
        summary["settings"]["dra"] = True
    return summary


def best(results: Sequence[StrategyResult]) -> StrategyResult | None:
    """The strategy that delivered the most GPU-hours (the first of equals)."""
    top: StrategyResult | None = None
    for r in results:
        if top is None or r.figures["gpu_hours"] > top.figures["gpu_hours"]:
            top = r
    return top


def figures(results: Sequence[StrategyResult]) -> dict[str, dict[str, Any]]:
    """Per strategy: the run's figures, the pods' fates, and GPU-hours against the best
    strategy and the oracle."""
    oracle = next((r for r in results if r.strategy == ORACLE), None)
    base = oracle.figures["gpu_hours"] if oracle is not None else None
    top = best(results)
    most = top.figures["gpu_hours"] if top is not None else 0.0
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        f = {**r.figures, **fates(r)}
        f["gpu_hours_lost"] = round(most - r.figures["gpu_hours"], 3)
        f["gpu_hours_ratio_to_oracle"] = round(r.figures["gpu_hours"] / base, 4) if base else None
        f["summary"] = BY_NAME[r.strategy].summary
        out[r.strategy] = f
    return out


def _over_seeds(runs: Sequence[Sequence[StrategyResult]]) -> dict[str, dict[str, Any]]:
    """Per strategy and figure: the per-seed values, their mean and 95% interval."""
    per_seed = [figures(results) for results in runs]
    out: dict[str, dict[str, Any]] = {}
    for name in per_seed[0]:
        out[name] = {}
        for figure in SEED_FIGURES:
            values = [float(seed[name][figure]) for seed in per_seed]
            e = estimate(values)
            out[name][figure] = {
                "per_seed": values,
                "mean": round(e.mean, 3),
                "low": None if e.low is None else round(e.low, 3),
                "high": None if e.high is None else round(e.high, 3),
            }
    return out


def _inadmissible(scenario: Scenario) -> list[dict[str, Any]]:
    return [
        {
            "pod_class": i.pod_class,
            "size": i.size,
            "pods": i.count,
            "examples": list(i.pods),
            "refusals": [
                {
                    "node_shape": r.node_shape,
                    "nodes": r.nodes,
                    "reason": r.reason,
                    "message": r.message,
                }
                for r in i.refusals
            ],
        }
        for i in never_admissible(scenario)
    ]


def document(
    scenario: Scenario,
    results: Sequence[StrategyResult],
    *,
    seeds: Sequence[int] = (),
    main_seeds: Sequence[Sequence[StrategyResult]] = (),
    sweep_parameter: str | None = None,
    sweep: Sequence[SweepPoint] = (),
) -> dict[str, Any]:
    """``results``: the main runs (the scenario's seed), in strategy order;
    ``main_seeds``: with several ``seeds``, the main runs of every seed (the first is
    ``results``); ``sweep``: every swept value's runs, per seed."""
    per_strategy = figures(results)
    for r in results:
        per_strategy[r.strategy]["by_node_shape"] = by_node_shape(r, scenario)
        per_strategy[r.strategy]["by_pod_class"] = by_pod_class(r, scenario)
    top = best(results)
    several = len(seeds) > 1
    doc: dict[str, Any] = {
        "scenario": scenario_summary(scenario),
        "strategy_order": [r.strategy for r in results],
        "best": None
        if top is None
        else {
            "strategy": top.strategy,
            "strategies": [
                r.strategy for r in results if r.figures["gpu_hours"] == top.figures["gpu_hours"]
            ],
            "gpu_hours": top.figures["gpu_hours"],
        },
        "strategies": per_strategy,
        "never_admissible": _inadmissible(scenario),
        "series": {
            r.strategy: {
                "gpu_utilization": [list(p) for p in r.utilization],
                "stranded_gpus": [list(p) for p in r.stranded],
                "pending_seconds_quantiles": _quantiles(r.pending_times),
            }
            for r in results
        },
        "seeds": {
            "values": list(seeds),
            "interval": INTERVAL,
            "strategies": _over_seeds(main_seeds),
        }
        if several
        else None,
        "sweep": None,
    }
    if sweep_parameter is not None:
        names = [r.strategy for r in sweep[0].seeds[0]] if sweep else []
        curves: dict[str, dict[str, dict[str, list[Any]]]] = {
            n: {f: {"mean": [], "low": [], "high": [], "per_seed": []} for f in SEED_FIGURES}
            for n in names
        }
        for point in sweep:
            at = _over_seeds(point.seeds)
            for name in names:
                for f in SEED_FIGURES:
                    for part in ("mean", "low", "high", "per_seed"):
                        curves[name][f][part].append(at[name][f][part])
        doc["sweep"] = {
            "parameter": sweep_parameter,
            "values": [p.value for p in sweep],
            "seeds": list(seeds) or [scenario.settings.seed],
            "interval": INTERVAL if several else None,
            "strategies": curves,
        }
    return doc


def to_json(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, indent=2) + "\n"
