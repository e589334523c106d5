"""Scenario f: the simulated kubelets' controller SIGKILLed mid-burst, pods submitted
while it is down, then restarted. It rebuilds its state from the API; nothing may be held
twice, and NRT and annotations converge to what it holds (the harness checks those on
every run: tests/e2e/driver.py)."""

from __future__ import annotations

from schedulers.adapter import Claim
from tests.e2e.outcome import Outcome, phase
from tests.e2e.scenarios.checking import none_rejected
from tests.e2e.scenarios.model import (
    AwaitBound,
    KillController,
    PodTemplate,
    RestartController,
    Scenario,
    Submit,
)
from tests.e2e.topologies import two_zone_node


def _burst(prefix: str, gpu_offset: int) -> tuple[PodTemplate, ...]:
    """Long-running pods and short ones that finish around the kill."""
    return tuple(
        PodTemplate(
            name=f"{prefix}{i}",
            cpu=str(1 + i % 2),
            gpus=(i + gpu_offset) % 2,
            run_duration=None if i % 3 else "2s",
        )
        for i in range(6)
    )


FIRST = _burst("a", 0)
SECOND = _burst("b", 1)


def _check_f(o: Outcome) -> list[str]:
    problems = none_rejected(o)
    if not any(phase(p) == "Running" for p in o.workload_pods()):
        problems.append("nothing survived the restart")
    return problems


F = Scenario(
    id="f",
    title="the simulated kubelets killed and restarted mid-burst",
    nodes=lambda: tuple(two_zone_node(policy="single-numa-node", gpus=2) for _ in range(2)),
    controller_args=("--start-delay", "500ms"),
    steps=(
        Submit(FIRST),
        AwaitBound(3),
        KillController(),
        Submit(SECOND),  # bound (or not) while no kubelet runs
        RestartController(),
    ),
    check=_check_f,
    predictable=False,
    # The kubelets' NRT stops following while they are down: a lag-safe scheduler copes.
    claim=Claim.LAG_SAFE,
)
