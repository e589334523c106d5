"""Benchmark of ``fakenrt simulate`` (pure simulation, no cluster).

Prints:
  * the bundled default scenario (16 GPU nodes, a day of training + inference pods, NRT
    20-60 s behind), every strategy: wall time with the command's default worker pool and
    in one process, and simulated pods per wall second;
  * scale: 1,000 nodes (the bundled shapes, 250 of each) and about 50,000 pods over a day
    for one strategy (``reconstruct-observed`` by default), in a child process: wall time,
    pods per second and the child's peak memory (max RSS).

Run: .venv/bin/python benchmarks/bench_simulate.py [--skip-scale] [--scale-strategy NAME]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakenrt.simulate.engine import simulate
from fakenrt.simulate.generator import GeneratorSettings, generate
from fakenrt.simulate.loading import Overrides, bundled_scenario, load_scenario
from fakenrt.simulate.runner import execute
from fakenrt.simulate.scenario import Scenario
from fakenrt.simulate.strategies import BY_NAME, NAMES
from fakenrt.simulate.sweep import plan


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the machine is shared, so
    wall time depends on the load; CPU time much less)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def default_scenario() -> Scenario:
    return load_scenario(bundled_scenario(), Overrides())


def bench_default(jobs: int) -> None:
    scenario = default_scenario()
    runs = plan(scenario, list(NAMES), None)
    for label, workers in ((f"{jobs} worker processes", jobs), ("one process", 1)):
        start = time.perf_counter()
        cpu_start = _cpu()
        results = execute(runs, jobs=workers)
        wall = time.perf_counter() - start
        cpu = _cpu() - cpu_start
        pods = len(scenario.workload) * len(results)
        print(
            f"default scenario, {len(results)} strategies, {label}: {wall:.1f} s wall "
            f"({cpu:.1f} CPU-s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs), "
            f"{pods / wall:,.0f} simulated pods per wall second, {pods / cpu:,.0f} per CPU-second "
            f"({len(scenario.workload)} pods x {len(results)} strategies)"
        )


def scale_scenario(nodes: int, pods: int) -> Scenario:
    base = default_scenario()
    shapes = sorted({n.name.rsplit("-", 1)[0]: n for n in base.nodes}.items())
    per_shape = nodes // len(shapes)
    profiles = tuple(
        replace(profile, name=f"{shape}-{i:04d}")
        for shape, profile in shapes
        for i in range(per_shape)
    )
    # About 2.8 pods per arrival in the training-inference mix.
    rate = pods / 24 / 2.78
    settings = GeneratorSettings(
        mix="training-inference", duration=86_400.0, arrivals_per_hour=rate
    )
    workload = generate(settings, seed=base.settings.seed)
    return replace(base, nodes=profiles, workload=workload)


def _scale_child(nodes: int, pods: int, strategy: str, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    scenario = scale_scenario(nodes, pods)
    start, cpu_start = time.perf_counter(), time.process_time()
    result = simulate(scenario, BY_NAME[strategy])
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out.put(
        (len(scenario.nodes), len(scenario.workload), wall, cpu, peak_kib, dict(result.figures))
    )


def bench_scale(nodes: int, pods: int, strategy: str) -> None:
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue = context.Queue()  # type: ignore[type-arg]
    child = context.Process(target=_scale_child, args=(nodes, pods, strategy, queue))
    child.start()
    n_nodes, n_pods, wall, cpu, peak_kib, figures = queue.get()
    child.join()
    print(
        f"scale, {strategy}: {n_nodes} nodes, {n_pods} pods over 24 h: {wall:.1f} s wall "
        f"({cpu:.1f} CPU-s), {n_pods / wall:,.0f} pods per wall second, "
        f"{n_pods / cpu:,.0f} per CPU-second, peak memory {peak_kib / 1024:,.0f} MiB; "
        f"binds {figures['binds']}, TAE {figures['topology_affinity_errors']}, "
        f"GPU utilization {figures['gpu_utilization']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-scale", action="store_true", help="only the default scenario")
    parser.add_argument("--skip-default", action="store_true", help="only the scale run")
    parser.add_argument("--scale-nodes", type=int, default=1000, help="nodes of the scale run")
    parser.add_argument("--scale-pods", type=int, default=50_000, help="pods of the scale run")
    parser.add_argument(
        "--scale-strategy", default="reconstruct-observed", choices=NAMES, help="its strategy"
    )
    parser.add_argument(
        "--jobs", type=int, default=min(os.cpu_count() or 1, 4), help="worker processes"
    )
    args = parser.parse_args()
    if not args.skip_default:
        bench_default(args.jobs)
    if not args.skip_scale:
        bench_scale(args.scale_nodes, args.scale_pods, args.scale_strategy)


if __name__ == "__main__":
    main()
