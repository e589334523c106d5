"""Benchmark of ``fakenrt simulate`` (pure simulation, no cluster) against its targets.

Every figure is CPU time (the machine is shared, so wall time depends on the load) and is
printed with its target and whether it meets it:

  * default: the bundled scenario (16 GPU nodes, a day of training + inference pods, NRT
    20-60 s behind), all six strategies in one process - target <= 10 CPU-s; also its
    wall time with the command's worker pool;
  * scale: 1,000 nodes (the bundled shapes, 250 of each) and about 50,000 pods over a day,
    one strategy (``reconstruct-observed`` by default), in a child process - targets
    <= 60 CPU-s and <= 400 MiB peak memory (the child's max RSS);
  * huge (``--huge``, long): 10,000 nodes and about 500,000 pods - targets <= 900 CPU-s
    (15 minutes) and <= 3 GiB; said not run while it is beyond the simulation's own
    bounds (``fakenrt.simulate.limits``);
  * cold: the reference scheduler's cycle (``fakenrt scheduler``'s ``SchedulingCycle``,
    as the loop builds it every cycle: no memo) against 5,000 two-zone nodes with two
    placed pods each, from a cold start: books built and one pod scheduled - target
    <= 50 ms per pod; also a burst of 40 pods of four shapes in one cold cycle.

Run: .venv/bin/python benchmarks/bench_simulate.py [--skip-default] [--skip-scale]
     [--skip-cold] [--huge] [--scale-strategy NAME]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from queue import Empty
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakenrt.simulate.engine import simulate
from fakenrt.simulate.generator import GeneratorSettings, generate
from fakenrt.simulate.limits import MAX_NODES, MAX_PODS
from fakenrt.simulate.loading import Overrides, bundled_scenario, load_scenario
from fakenrt.simulate.runner import execute
from fakenrt.simulate.scenario import Scenario
from fakenrt.simulate.strategies import BY_NAME, NAMES
from fakenrt.simulate.sweep import plan

MIB = 1024 * 1024


def _cpu() -> float:
    """CPU seconds of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def verdict(value: float, target: float) -> str:
    return "meets target" if value <= target else "MISSES target"


def report(label: str, value: float, target: float, unit: str) -> None:
    print(
        f"  {label}: {value:,.1f} {unit} (target <= {target:,.0f} {unit}): {verdict(value, target)}"
    )


def default_scenario() -> Scenario:
    return load_scenario(bundled_scenario(), Overrides())


def bench_default(jobs: int) -> None:
    scenario = default_scenario()
    runs = plan(scenario, list(NAMES), None)
    start = time.perf_counter()
    execute(runs, jobs=jobs)
    pool_wall = time.perf_counter() - start
    start, cpu_start = time.perf_counter(), _cpu()
    results = execute(runs, jobs=1)
    wall, cpu = time.perf_counter() - start, _cpu() - cpu_start
    pods = len(scenario.workload) * len(results)
    print(
        f"default scenario ({len(scenario.workload)} pods x {len(results)} strategies): one "
        f"process {wall:.1f} s wall, {pods / cpu:,.0f} simulated pods per CPU-second; "
        f"{jobs} worker processes {pool_wall:.1f} s wall (load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
    )
    report("CPU, six strategies", cpu, 10, "s")


def scale_scenario(nodes: int, pods: int) -> Scenario:
    """``nodes`` nodes of the bundled shapes (a quarter each) and about ``pods`` pods of
    the training-inference mix over a day (the bundled settings)."""
    base = default_scenario()
    shapes = sorted({n.name.rsplit("-", 1)[0]: n for n in base.nodes}.items())
    per_shape = nodes // len(shapes)
    width = max(4, len(str(per_shape)))
    profiles = tuple(
        replace(profile, name=f"{shape}-{i:0{width}d}")
        for shape, profile in shapes
        for i in range(per_shape)
    )
    # About 2.78 pods per arrival in the training-inference mix.
    rate = pods / 24 / 2.78
    settings = GeneratorSettings(
        mix="training-inference", duration=86_400.0, arrivals_per_hour=rate
    )
    workload = generate(settings, seed=base.settings.seed)
    return replace(base, nodes=profiles, workload=workload)


def _scale_child(nodes: int, pods: int, strategy: str, out: Any) -> None:
    scenario = scale_scenario(nodes, pods)
    start, cpu_start = time.perf_counter(), time.process_time()
    result = simulate(scenario, BY_NAME[strategy])
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out.put(
        (len(scenario.nodes), len(scenario.workload), wall, cpu, peak_kib, dict(result.figures))
    )


def bench_scale(
    nodes: int, pods: int, strategy: str, *, cpu_target: float, mib_target: float
) -> None:
    context = multiprocessing.get_context("fork")
    queue: Any = context.Queue()
    child = context.Process(target=_scale_child, args=(nodes, pods, strategy, queue))
    child.start()
    while True:  # the child's result, or its exit code when it died without one
        try:
            n_nodes, n_pods, wall, cpu, peak_kib, figures = queue.get(timeout=5)
            break
        except Empty:
            if not child.is_alive():
                sys.exit(f"scale, {nodes:,} x {pods:,}: the simulation exited ({child.exitcode})")
    child.join()
    print(
        f"scale, {strategy}: {n_nodes:,} nodes, {n_pods:,} pods over 24 h: {wall:.1f} s wall, "
        f"{n_pods / cpu:,.0f} pods per CPU-second; binds {figures['binds']}, TAE "
        f"{figures['topology_affinity_errors']}, GPU utilization {figures['gpu_utilization']}"
    )
    report("CPU", cpu, cpu_target, "s")
    report("peak memory (max RSS)", peak_kib / 1024, mib_target, "MiB")


def _best(fn: Callable[[], None], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def bench_cold(nodes: int) -> None:
    from benchmarks.bench_scheduler import cluster_snapshot, pod
    from fakenrt.scheduler.cycle import SchedulingCycle
    from fakenrt.scheduler.plugin import NumaPlugin

    snapshot = cluster_snapshot(nodes)
    plugin = NumaPlugin()
    incoming = pod("incoming", cpu=32, gpu=4, memory_gi=128)
    # (CPUs, GPUs, GiB of memory)
    shapes = [(32, 4, 128), (8, 1, 32), (16, 2, 64), (4, 0, 8)]
    burst = [
        pod(f"b{i:02d}", cpu=c, gpu=g, memory_gi=m)
        for i, (c, g, m) in enumerate(shapes[i % len(shapes)] for i in range(40))
    ]

    def one() -> None:
        SchedulingCycle(snapshot, plugin).schedule(incoming)

    def many() -> None:
        cycle = SchedulingCycle(snapshot, plugin)
        for p in burst:
            cycle.schedule(p)

    single = _best(one)
    per_pod = _best(many) / len(burst)
    print(
        f"reference scheduler, cold cycle vs {nodes:,} two-zone nodes (2 placed pods each): "
        f"books + one pod {single * 1000:.1f} ms; a burst of {len(burst)} pods of "
        f"{len(shapes)} shapes {per_pod * 1000:.1f} ms per pod (CPU, best of 3)"
    )
    report("one pod from a cold start", single * 1000, 50, "ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-default", action="store_true", help="not the default scenario")
    parser.add_argument("--skip-scale", action="store_true", help="not the 1,000-node run")
    parser.add_argument("--skip-cold", action="store_true", help="not the cold scheduler cycle")
    parser.add_argument("--huge", action="store_true", help="also 10,000 nodes x 500,000 pods")
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
        bench_scale(
            args.scale_nodes, args.scale_pods, args.scale_strategy, cpu_target=60, mib_target=400
        )
    if args.huge:
        if MAX_NODES < 10_000 or MAX_PODS < 500_000:
            # The simulation's own input bounds refuse the run (fakenrt/simulate/limits.py).
            print(
                f"huge, 10,000 nodes x 500,000 pods (targets <= 900 CPU-s, <= 3 GiB): not "
                f"run - beyond fakenrt simulate's bounds ({MAX_NODES:,} nodes, {MAX_PODS:,} "
                f"pods); docs/simulate.md extrapolates it from the measured scale points"
            )
        else:
            bench_scale(10_000, 500_000, args.scale_strategy, cpu_target=900, mib_target=3 * 1024)
    if not args.skip_cold:
        bench_cold(5000)


if __name__ == "__main__":
    main()
