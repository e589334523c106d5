"""The results of a ``fakenrt simulate`` run as one JSON-ready document. Pure; the same
inputs and seed give byte-identical JSON (keys sorted, floats rounded)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fakenrt.profiles.resources import node_allocatable
from fakenrt.simulate.metrics import StrategyResult, percentile
from fakenrt.simulate.scenario import Scenario
from fakenrt.simulate.strategies import BY_NAME, ORACLE
from fakenrt.simulate.workload import GPU

#: Quantiles of the pending-time distribution kept in the JSON (0, 5, ..., 95, 99 %).
QUANTILES = (*range(0, 100, 5), 99)
SWEEP_FIGURES = ("topology_affinity_errors_per_1000_binds", "gpu_hours")


@dataclass(frozen=True)
class SweepPoint:
    value: float
    results: tuple[StrategyResult, ...]


def _quantiles(values: Sequence[float]) -> list[list[float]]:
    if not values:
        return []
    out = []
    for q in QUANTILES:
        v = values[0] if q == 0 else percentile(values, q)
        out.append([float(q), round(float(v or 0.0), 3)])
    return out


def scenario_summary(scenario: Scenario) -> dict[str, Any]:
    s = scenario.settings
    shapes: dict[str, int] = {}
    for node in scenario.nodes:
        k = node.kubelet
        label = f"{len(node.zones)}-zone {k.topology_manager_policy}/{k.topology_manager_scope}"
        shapes[label] = shapes.get(label, 0) + 1
    gpus = sum(node_allocatable(n).get(GPU, 0) for n in scenario.nodes)
    return {
        **dict(scenario.description),
        "nodes": len(scenario.nodes),
        "node_shapes": dict(sorted(shapes.items())),
        "gpus": gpus,
        "pods": len(scenario.workload),
        "horizon_seconds": round(scenario.horizon, 3),
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


def _with_ratio(results: Sequence[StrategyResult]) -> dict[str, dict[str, Any]]:
    oracle = next((r for r in results if r.strategy == ORACLE), None)
    base = oracle.figures["gpu_hours"] if oracle is not None else None
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        figures = dict(r.figures)
        figures["gpu_hours_ratio_to_oracle"] = (
            round(r.figures["gpu_hours"] / base, 4) if base else None
        )
        figures["summary"] = BY_NAME[r.strategy].summary
        out[r.strategy] = figures
    return out


def document(
    scenario: Scenario,
    results: Sequence[StrategyResult],
    *,
    sweep_parameter: str | None = None,
    sweep: Sequence[SweepPoint] = (),
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "scenario": scenario_summary(scenario),
        "strategy_order": [r.strategy for r in results],
        "strategies": _with_ratio(results),
        "series": {
            r.strategy: {
                "gpu_utilization": [list(p) for p in r.utilization],
                "stranded_gpus": [list(p) for p in r.stranded],
                "pending_seconds_quantiles": _quantiles(r.pending_times),
            }
            for r in results
        },
        "sweep": None,
    }
    if sweep_parameter is not None:
        names = [r.strategy for r in sweep[0].results] if sweep else []
        curves: dict[str, dict[str, list[Any]]] = {n: {f: [] for f in SWEEP_FIGURES} for n in names}
        for point in sweep:
            for r in point.results:
                for f in SWEEP_FIGURES:
                    curves[r.strategy][f].append(r.figures[f])
        doc["sweep"] = {
            "parameter": sweep_parameter,
            "values": [p.value for p in sweep],
            "strategies": curves,
        }
    return doc


def to_json(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, indent=2) + "\n"
