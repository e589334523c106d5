"""The oracle on a real kubelet (marked ``kind``: runs with ``pytest --kind``): the fixed
scenarios and 50 seeded random ones on a real-kubelet Kind worker, each compared pod by
pod with the simulator. A disagreement fails with its reproducer."""

from __future__ import annotations

import io

import pytest

from fakenrt.realnode.scenarios import fixed_scenarios, random_scenarios
from tests.realnode.oracle_run import run

pytestmark = [pytest.mark.kind, pytest.mark.timeout(3600)]

RANDOM = 50
SEED = 1


def test_real_kubelet_agrees_with_the_simulator() -> None:
    out = io.StringIO()
    report = run(fixed_scenarios() + random_scenarios(RANDOM, SEED), out=out)
    assert report.scenarios == len(fixed_scenarios()) + RANDOM
    assert not report.reproducers, out.getvalue() + "\n\n".join(report.reproducers)
