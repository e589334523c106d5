"""The oracle on a real kubelet: scenarios run on the simulator and on a real-kubelet Kind
worker, compared pod by pod (docs/real-kubelet.md).

    python -m tests.realnode.oracle_run [--no-fixed] [--random N] [--seed S]

prints one line per scenario, a reproducer per disagreeing scenario, and the counts
(scenarios, pods, compared fields) and wall time; exit 1 on any disagreement. The
cluster (``numa-testkit-oracle``) is deleted at the end.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from fakenrt.realnode.oracle import (
    compare,
    compared_fields,
    real_verdicts,
    reproducer,
    simulated_verdicts,
)
from fakenrt.realnode.scenarios import (
    Scenario,
    fixed_scenarios,
    random_scenarios,
    scenario_inputs,
)
from tests.realnode.realkubelet import RealKubeletNode, create, delete

CLUSTER = "numa-testkit-oracle"


@dataclass
class Report:
    scenarios: int = 0
    pods: int = 0
    fields: int = 0
    seconds: float = 0.0
    reproducers: list[str] = field(default_factory=list)


def run_scenario(real: RealKubeletNode, scenario: Scenario, report: Report, out: IO[str]) -> None:
    profile, pods = scenario_inputs(scenario)
    real.configure(profile, scenario.profile_text)
    statuses = real.run_pods(scenario.pods)
    listed = real.listed()
    simulated = simulated_verdicts(profile, pods)
    kubelet = real_verdicts(pods=pods, statuses=statuses, listed=listed, profile=profile)
    differences = compare(simulated, kubelet)
    report.scenarios += 1
    report.pods += len(pods)
    report.fields += compared_fields(simulated)
    verdicts = " ".join("ok" if v.admitted else str(v.reason) for v in kubelet)
    print(f"{scenario.name}: {len(differences)} difference(s) [{verdicts}]", file=out, flush=True)
    if differences:
        report.reproducers.append(
            reproducer(
                scenario=scenario.name,
                profile_text=scenario.profile_text,
                node=scenario.node_name,
                pods=scenario.pods,
                differences=differences,
            )
        )


def run_on(
    real: RealKubeletNode, scenarios: Sequence[Scenario], *, out: IO[str] = sys.stdout
) -> Report:
    """The scenarios on ``real``, a worker of a running cluster."""
    report = Report()
    start = time.monotonic()
    for scenario in scenarios:
        run_scenario(real, scenario, report, out)
    report.seconds = time.monotonic() - start
    return report


def run(scenarios: Sequence[Scenario], *, out: IO[str] = sys.stdout) -> Report:
    """The scenarios on a cluster of their own (:data:`CLUSTER`), deleted afterwards."""
    report = Report()
    start = time.monotonic()
    first, _ = scenario_inputs(scenarios[0])
    with tempfile.TemporaryDirectory(prefix="oracle-", dir="/tmp") as tmp:
        nodes = create(cluster=CLUSTER, work_dir=Path(tmp), profiles=[first])
        try:
            for scenario in scenarios:
                run_scenario(nodes[0], scenario, report, out)
        finally:
            delete(nodes)
    report.seconds = time.monotonic() - start
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-fixed", action="store_true", help="skip the fixed scenarios")
    parser.add_argument("--random", type=int, default=0, metavar="N", help="random scenarios")
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="their seed")
    args = parser.parse_args(argv)
    scenarios = (() if args.no_fixed else fixed_scenarios()) + random_scenarios(
        args.random, args.seed
    )
    if not scenarios:
        parser.error("no scenarios to run")
    report = run(scenarios)
    for text in report.reproducers:
        print("\n" + text)
    print(
        f"{report.scenarios} scenarios, {report.pods} pods, {report.fields} compared fields, "
        f"{len(report.reproducers)} disagreeing scenario(s), {report.seconds:.0f} s"
    )
    return 1 if report.reproducers else 0


if __name__ == "__main__":
    sys.exit(main())
