"""What the scorecard asserts, judged over records given as tables."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from schedulers.adapter import Adapter, Claim
from schedulers.reference import RECONSTRUCTION, STALE_NRT
from tests.scorecard.assertions import Verdict, judge, required_cells

#: Stand-ins with the families the assertions name (the real adapters need builds).
BLIND = replace(
    RECONSTRUCTION,
    scheduler="kube-scheduler",
    mode="",
    claims=frozenset(),
    allocates_claims=True,
)
KAI = replace(RECONSTRUCTION, scheduler="kai", mode="reconstruction")
ADAPTERS = (RECONSTRUCTION, STALE_NRT, BLIND, KAI)


def rec(
    scheduler: Adapter,
    scenario: str,
    variant: str,
    errors: int = 0,
    *,
    default: bool = True,
    findings: dict[str, list[str]] | None = None,
    harness: dict[str, list[str]] | None = None,
    misaligned: int | None = None,
    pending: int = 0,
) -> dict[str, Any]:
    return {
        "misaligned": misaligned,
        "pending": pending,
        "scheduler": scheduler.id,
        "scenario": scenario,
        "variant": variant,
        "default_variant": default,
        "topology_affinity_errors": errors,
        "claims": sorted(c.value for c in scheduler.claims),
        "findings": findings or {},
        "harness_problems": harness or {},
    }


def _verdict(records: list[dict[str, Any]], which: str) -> Verdict:
    (found,) = [v for v in judge(records, ADAPTERS) if v.id == which]
    return found


CAUGHT = [
    rec(BLIND, "a", "exporter-lag0", 1),
    rec(BLIND, "b", "exporter-lag0", 1),
    rec(BLIND, "g", "exporter-lag0", 3),
    rec(STALE_NRT, "d", "exporter-lag5", 4),
    rec(KAI, "g", "no-exporter-lag0", 2, default=False),
    rec(KAI, "g", "exporter-lag0", 0),
    rec(BLIND, "i", "exporter-lag0", misaligned=1),
    rec(BLIND, "k", "exporter-lag0", misaligned=1),
    rec(BLIND, "j", "exporter-lag0", misaligned=0, pending=1),
]


def test_every_assertion_holds_on_a_run_that_shows_what_it_must() -> None:
    assert {v.id: v.passed for v in judge(CAUGHT, ADAPTERS)} == {
        "harness": True,
        "claims": True,
        "numa-blind-caught": True,
        "stale-nrt-caught": True,
        "seed-000-hole": True,
        "dra-misaligned-caught": True,
    }


@pytest.mark.parametrize(
    ("change", "which"),
    [
        pytest.param({2: rec(BLIND, "g", "exporter-lag0", 0)}, "numa-blind-caught", id="blind-g-0"),
        pytest.param({0: None}, "numa-blind-caught", id="blind-a-not-run"),
        pytest.param(
            {3: rec(STALE_NRT, "d", "exporter-lag5", 0)}, "stale-nrt-caught", id="stale-0"
        ),
        pytest.param(
            {4: rec(KAI, "g", "no-exporter-lag0", 0, default=False)}, "seed-000-hole", id="no-hole"
        ),
        pytest.param({5: rec(KAI, "g", "exporter-lag0", 2)}, "seed-000-hole", id="hole-not-closed"),
        pytest.param({5: None}, "seed-000-hole", id="with-exporter-not-run"),
        pytest.param(
            {6: rec(BLIND, "i", "exporter-lag0", misaligned=0)},
            "dra-misaligned-caught",
            id="i-aligned",
        ),
        pytest.param(
            {7: rec(BLIND, "k", "exporter-lag0")}, "dra-misaligned-caught", id="k-not-read"
        ),
        pytest.param(
            {8: rec(BLIND, "j", "exporter-lag0", misaligned=1, pending=1)},
            "dra-misaligned-caught",
            id="j-misaligned",
        ),
        pytest.param(
            {8: rec(BLIND, "j", "exporter-lag0", misaligned=0)},
            "dra-misaligned-caught",
            id="j-no-room-placed",
        ),
        pytest.param({6: None}, "dra-misaligned-caught", id="i-not-run"),
    ],
)
def test_an_assertion_fails_when_its_evidence_is_missing_or_wrong(
    change: dict[int, dict[str, Any] | None], which: str
) -> None:
    records = [change.get(i, r) for i, r in enumerate(CAUGHT)]
    verdict = _verdict([r for r in records if r is not None], which)
    assert verdict.passed is False, verdict


def test_missing_cells_fail_a_whole_matrix_and_not_a_partial_run() -> None:
    """A cell rerun (or --scheduler, --scenario) does not run what the assertions need:
    they do not apply; a whole matrix that lacks them fails. A cell that ran and
    contradicts an assertion fails either way."""
    some = [CAUGHT[0], CAUGHT[3]]
    partial = {v.id: v.passed for v in judge(some, ADAPTERS, complete=False)}
    assert partial["numa-blind-caught"] is None and partial["seed-000-hole"] is None
    assert partial["stale-nrt-caught"] is True
    whole = {v.id: v.passed for v in judge(some, ADAPTERS)}
    assert whole["numa-blind-caught"] is False and whole["seed-000-hole"] is False
    wrong = [rec(BLIND, "a", "exporter-lag0", 0)]
    assert {v.id: v.passed for v in judge(wrong, ADAPTERS, complete=False)}[
        "numa-blind-caught"
    ] is False


def test_a_scheduler_that_is_not_registered_makes_its_assertion_not_applicable() -> None:
    verdicts = {v.id: v.passed for v in judge([], (RECONSTRUCTION,))}
    assert verdicts["numa-blind-caught"] is None and verdicts["seed-000-hole"] is None
    assert verdicts["stale-nrt-caught"] is None  # no mode trusts a stale NRT


def test_harness_problems_fail_in_any_cell_findings_never_do() -> None:
    findings = {"aligned": ["one pod too many"]}
    unclaimed = replace(RECONSTRUCTION, claims=frozenset())
    assert _verdict(
        [*CAUGHT, rec(unclaimed, "b", "exporter-lag0", findings=findings)], "claims"
    ).passed
    harness = {"held_twice": ["n1 cpu 0"]}
    assert not _verdict(
        [*CAUGHT, rec(KAI, "c", "no-exporter-lag5", harness=harness)], "harness"
    ).passed


def test_broken_claims_fail_only_in_the_default_variant() -> None:
    """KAI claims `aligned`: its own hole (g without exporter) is a finding, the same
    problem in the default variant fails the run."""
    broken = {Claim.ALIGNED.value: ["gpu2-3: TopologyAffinityError"]}
    other = rec(KAI, "g", "no-exporter-lag0", 2, default=False, findings=broken)
    assert _verdict([*CAUGHT[:4], other, CAUGHT[5]], "claims").passed
    default = rec(KAI, "g", "exporter-lag0", 0, findings=broken)
    assert not _verdict([*CAUGHT[:5], default], "claims").passed


def test_required_cells_are_what_the_assertions_look_at() -> None:
    ids = {c.id for c in required_cells(ADAPTERS)}
    assert ids == {
        "kube-scheduler/a/exporter-lag0",
        "kube-scheduler/b/exporter-lag0",
        "kube-scheduler/g/exporter-lag0",
        "reference-stale-nrt/d/exporter-lag5",
        "kai-reconstruction/g/no-exporter-lag0",
        "kai-reconstruction/g/exporter-lag0",
        "kube-scheduler/i/exporter-lag0",
        "kube-scheduler/j/exporter-lag0",
        "kube-scheduler/k/exporter-lag0",
    }


def test_the_exporter_closing_the_hole_means_fewer_errors_with_it() -> None:
    """Seed 000's hole is errors without the exporter; with it the pre-bound pods are
    visible and the hole's errors go: what is left is another mistake, a finding."""
    for with_exporter, holds in ((0, True), (1, True), (2, False), (3, False)):
        records = [*CAUGHT[:5], rec(KAI, "g", "exporter-lag0", with_exporter)]
        assert _verdict(records, "seed-000-hole").passed is holds, with_exporter
