"""The oracle on a real kubelet: scenarios run on the simulator and on a real-kubelet Kind
worker, compared pod by pod (docs/real-kubelet.md).

    python -m tests.realnode.oracle_run [--no-fixed] [--no-dra] [--random N] [--seed S]
                                        [--workers N]

runs them on N real-kubelet workers side by side (default 2), prints one line per
scenario, a reproducer per disagreeing scenario, and the counts (scenarios, pods,
compared fields) and wall time; exit 1 on any disagreement. The cluster
(``numa-testkit-oracle``, or ``$NUMA_TESTKIT_ORACLE_CLUSTER``) is deleted at the end.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from fakenrt.dra.claims import claim_from_manifest
from fakenrt.dra.slices import on_node
from fakenrt.podspec import pod_from_manifest
from fakenrt.profiles.model import NodeProfile
from fakenrt.realnode.oracle import (
    Verdict,
    compare,
    compared_fields,
    dra_zones,
    misaligned_pods,
    real_verdicts,
    reproducer,
    simulated_verdicts,
)
from fakenrt.realnode.scenarios import (
    Scenario,
    dra_scenarios,
    fixed_scenarios,
    random_scenarios,
    scenario_inputs,
)
from tests.realnode.dynamic import list_dynamic
from tests.realnode.exporter_view import observe
from tests.realnode.realkubelet import RealKubeletNode, create, delete, wait_for

CLUSTER = os.environ.get("NUMA_TESTKIT_ORACLE_CLUSTER", "numa-testkit-oracle")


@dataclass
class Report:
    scenarios: int = 0
    pods: int = 0
    fields: int = 0
    seconds: float = 0.0
    reproducers: list[str] = field(default_factory=list)
    #: DRA scenarios: how many, their pods, and the pods the kubelet ran misaligned.
    dra_scenarios: int = 0
    dra_pods: int = 0
    misaligned: list[str] = field(default_factory=list)
    #: The exporter on the real kubelet (tests/realnode/exporter_view.py): the DRA pods
    #: whose observed zones it was checked on, the devices by the rule that placed them,
    #: and where it disagreed with the kubelet's listing.
    exporter_pods: int = 0
    exporter_rules: dict[str, int] = field(default_factory=dict)
    exporter_differences: list[str] = field(default_factory=list)


def run_scenario(real: RealKubeletNode, scenario: Scenario, report: Report, out: IO[str]) -> None:
    profile, pods = scenario_inputs(scenario)
    real.configure(profile, scenario.profile_text)
    live = real.run_pods(scenario.pods, claims=scenario.claims, scheduled=scenario.scheduled)
    statuses = {key: pod.get("status", {}) for key, pod in live.items()}
    listed = real.listed()
    claims = []
    dynamic = None
    if scenario.claims:
        # the kubelet's view of the node: named as Kind names it (its pools too), the pods
        # and claims as the API server has them (uids, claim statuses, allocations)
        profile = on_node(profile, real.node)
        pods = [pod_from_manifest(live[p.key], source=f"{scenario.name}: {p.key}") for p in pods]
        claims = [claim_from_manifest(c, source=scenario.name) for c in real.claims()]
        dynamic = list_dynamic(real.socket)
    simulated = simulated_verdicts(profile, pods, claims)
    kubelet = real_verdicts(
        pods=pods, statuses=statuses, listed=listed, profile=profile, dynamic=dynamic
    )
    differences = compare(simulated, kubelet)
    report.scenarios += 1
    report.pods += len(pods)
    report.fields += compared_fields(simulated)
    verdicts = " ".join("ok" if v.admitted else str(v.reason) for v in kubelet)
    misaligned = ""
    if scenario.claims:
        report.dra_scenarios += 1
        report.dra_pods += len(pods)
        ran = misaligned_pods(kubelet, profile)
        report.misaligned += [f"{scenario.name}/{p.rsplit('/', 1)[1]}" for p in ran]
        misaligned = f", misaligned on the kubelet: {', '.join(ran) or '-'}"
        misaligned += _check_exporter(
            real, scenario=scenario.name, kubelet=kubelet, profile=profile, misaligned=ran,
            report=report,
        )  # fmt: skip
    # one write per line: workers report side by side
    out.write(f"{scenario.name}: {len(differences)} difference(s) [{verdicts}]{misaligned}\n")
    out.flush()
    if differences:
        report.reproducers.append(
            reproducer(
                scenario=scenario.name,
                profile_text=scenario.profile_text,
                node=scenario.node_name,
                pods=scenario.pods,
                differences=differences,
                claims=real.claims() if scenario.claims else (),
            )
        )


def _check_exporter(
    real: RealKubeletNode,
    *,
    scenario: str,
    kubelet: Sequence[Verdict],
    profile: NodeProfile,
    misaligned: Sequence[str],
    report: Report,
) -> str:
    """The exporter's view of the node against the kubelet's listing: each DRA pod's
    devices per NUMA zone, and the misaligned pods."""
    view = observe(real, real.namespace)
    drivers = {d.name for d in profile.dra}
    expected = dra_zones(kubelet, profile)
    differences = []
    for pod, zones in expected.items():
        observed = {
            numa: {k: v for k, v in amounts.items() if k in drivers}
            for numa, amounts in view.placements.get(pod, {}).items()
        }
        observed = {numa: amounts for numa, amounts in observed.items() if amounts}
        if observed != zones:
            differences.append(f"{scenario}: {pod}: exporter zones {observed}, kubelet {zones}")
    if view.events != dict.fromkeys(misaligned, 1):
        differences.append(
            f"{scenario}: exporter's DRAMisaligned events {view.events}, kubelet runs "
            f"{sorted(misaligned)} misaligned (one event each)"
        )
    if view.misaligned != frozenset(misaligned):
        differences.append(
            f"{scenario}: exporter names misaligned {sorted(view.misaligned)}, "
            f"kubelet runs {sorted(misaligned)}"
        )
    report.exporter_pods += len(expected)
    for rule, count in view.rules.items():
        report.exporter_rules[rule] = report.exporter_rules.get(rule, 0) + count
    report.exporter_differences += differences
    return f"; exporter: {len(expected)} DRA pods placed, {len(differences)} difference(s)"


def run_on(
    workers: Sequence[RealKubeletNode], scenarios: Sequence[Scenario], *, out: IO[str] = sys.stdout
) -> Report:
    """The scenarios on ``workers`` of a running cluster, side by side: each worker runs
    its pods in a namespace of its own (the first in the scenarios' own, ``default``) and
    takes the next scenario when it is done. Scenarios with claims run on the first
    worker, in this thread (the exporter it runs to check them is started here)."""
    queue = deque(s for s in scenarios if not s.claims)
    on_first = [s for s in scenarios if s.claims]
    lock = threading.Lock()
    failed = threading.Event()

    def work(real: RealKubeletNode, first: Sequence[Scenario] = ()) -> Report:
        report = Report()
        pending = deque(first)
        while not failed.is_set():
            with lock:
                if not pending and queue:
                    pending.append(queue.popleft())
            if not pending:
                return report
            scenario = pending.popleft()
            try:
                run_scenario(real, scenario.in_namespace(real.namespace), report, out)
            except BaseException:
                failed.set()
                raise
        return report

    start = time.monotonic()
    workers = [_in_namespace(real, i) for i, real in enumerate(workers)]
    with ThreadPoolExecutor(max_workers=max(1, len(workers) - 1)) as pool:
        others = [pool.submit(work, real) for real in workers[1:]]
        # A failure on the first worker propagates as it is (the others stop at their
        # next scenario; leaving the pool waits for them); theirs come with their results.
        reports = [work(workers[0], on_first), *(f.result() for f in others)]
    report = merged(reports)
    report.seconds = time.monotonic() - start
    return report


def _in_namespace(real: RealKubeletNode, index: int) -> RealKubeletNode:
    """``real`` with the namespace of worker ``index``, made if missing."""
    if index == 0:
        return real
    namespace = f"oracle-{index + 1}"
    if not real.kubectl_run("get", "namespace", namespace, "--ignore-not-found").strip():
        real.kubectl_run("create", "namespace", namespace)
    wait_for(
        f"the default ServiceAccount of namespace {namespace}",
        lambda: (
            True
            if real.kubectl_run(
                "-n", namespace, "get", "serviceaccount", "default", "--ignore-not-found"
            ).strip()
            else None
        ),
    )
    return dataclasses.replace(real, namespace=namespace)


def merged(reports: Sequence[Report]) -> Report:
    """One report of the workers' reports."""
    out = Report()
    for r in reports:
        out.scenarios += r.scenarios
        out.pods += r.pods
        out.fields += r.fields
        out.reproducers += r.reproducers
        out.dra_scenarios += r.dra_scenarios
        out.dra_pods += r.dra_pods
        out.misaligned += r.misaligned
        out.exporter_pods += r.exporter_pods
        for rule, count in r.exporter_rules.items():
            out.exporter_rules[rule] = out.exporter_rules.get(rule, 0) + count
        out.exporter_differences += r.exporter_differences
    return out


def run(scenarios: Sequence[Scenario], *, workers: int = 2, out: IO[str] = sys.stdout) -> Report:
    """The scenarios on a cluster of their own (:data:`CLUSTER`) with ``workers``
    real-kubelet workers, deleted afterwards."""
    start = time.monotonic()
    first, _ = scenario_inputs(scenarios[0])
    with tempfile.TemporaryDirectory(prefix="oracle-", dir="/tmp") as tmp:
        nodes = create(cluster=CLUSTER, work_dir=Path(tmp), profiles=[first] * workers)
        try:
            report = run_on(nodes, scenarios, out=out)
        finally:
            delete(nodes)
    report.seconds = time.monotonic() - start
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-fixed", action="store_true", help="skip the fixed scenarios")
    parser.add_argument("--no-dra", action="store_true", help="skip the DRA scenarios")
    parser.add_argument("--random", type=int, default=0, metavar="N", help="random scenarios")
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="their seed")
    parser.add_argument(
        "--workers", type=int, default=2, choices=range(1, 9), metavar="N",
        help="real-kubelet workers running scenarios side by side (1-8; default 2)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    scenarios = (
        (() if args.no_fixed else fixed_scenarios())
        + (() if args.no_dra else dra_scenarios())
        + random_scenarios(args.random, args.seed)
    )
    if not scenarios:
        parser.error("no scenarios to run")
    report = run(scenarios, workers=args.workers)
    for text in report.reproducers:
        print("\n" + text)
    print(
        f"{report.scenarios} scenarios, {report.pods} pods, {report.fields} compared fields, "
        f"{len(report.reproducers)} disagreeing scenario(s), {report.seconds:.0f} s"
    )
    if report.dra_scenarios:
        print(
            f"DRA: {report.dra_scenarios} scenarios, {report.dra_pods} pods, "
            f"{len(report.misaligned)} run misaligned by the kubelet: "
            f"{', '.join(report.misaligned) or '-'}"
        )
        print(
            f"exporter on the real kubelet: {report.exporter_pods} DRA pods, devices by rule "
            f"{dict(sorted(report.exporter_rules.items()))}, "
            f"{len(report.exporter_differences)} difference(s)"
        )
        for text in report.exporter_differences:
            print("  " + text)
    return 1 if report.reproducers or report.exporter_differences else 0


if __name__ == "__main__":
    sys.exit(main())
