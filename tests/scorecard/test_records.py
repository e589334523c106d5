"""A record's figures from an outcome: each counted the way docs/scorecard.md says."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from schedulers.adapter import Adapter, Claim
from schedulers.reference import RECONSTRUCTION, STALE_NRT
from tests.e2e.outcome import Outcome, Transition, deleted_as_seen
from tests.e2e.scenarios import SCENARIOS, Scenario
from tests.e2e.variants import LAG_5S, Variant
from tests.scorecard.builders import (
    gpu,
    kubelet_rejection,
    outcome,
    placement,
    pod,
    scheduler_event,
)
from tests.scorecard.matrix import Cell
from tests.scorecard.records import (
    FIELDS,
    all_findings,
    broken_claims,
    failed_record,
    harness_problems,
    record,
)

MIB256 = str(256 << 20)
#: Scenario b's definition with a check that finds nothing (the figures are under test).
QUIET_B = replace(SCENARIOS["b"], check=lambda o: [])


def _cell(
    scenario: Scenario = QUIET_B,
    scheduler: Adapter = RECONSTRUCTION,
    variant: Variant | None = None,
) -> Cell:
    return Cell(scheduler, scenario, variant or scenario.default_variant)


def _record(o: Outcome, cell: Cell | None = None) -> dict[str, Any]:
    return record(cell or _cell(), o, command="make scorecard CELL=x")


MIXED = outcome(
    [
        pod("ran", cpus="0-1", gpus=(gpu(0, 0),)),
        pod("done", phase="Succeeded", cpus="2", gpus=(gpu(0, 1),)),
        pod("refused", phase="Failed", reason="TopologyAffinityError"),
        pod("outofcpu", phase="Failed", reason="OutOfcpu"),
        pod("waiting", node=None, phase="Pending", unschedulable="0/1 nodes: single-numa-node"),
        pod("silent", node=None, phase="Pending"),
    ],
    events=[kubelet_rejection("refused")],
    timeline=[
        Transition(1.0, "ran", "submitted"),
        Transition(2.5, "ran", "bound", "n1"),
        Transition(4.25, "done", "bound", "n1"),
    ],
    first_submit_s=1.0,
)


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        pytest.param("submitted", 6, id="submitted"),
        pytest.param("bound", 4, id="bound"),
        pytest.param("running", 2, id="running-or-succeeded"),
        pytest.param("running_at_end", 1, id="running-at-end"),
        pytest.param("topology_affinity_errors", 1, id="topology-affinity-errors"),
        pytest.param("other_admission_errors", 1, id="other-admission-errors"),
        pytest.param("pending", 2, id="pending"),
        pytest.param("unreported_pending", 1, id="unreported"),
        pytest.param("gpus_in_use", 1, id="gpus-held-by-running-pods-only"),
        pytest.param("seconds_to_last_bind", 3.25, id="first-submit-to-last-bind"),
        pytest.param("prediction_agreement", None, id="no-prediction-is-null"),
        pytest.param("settled", True, id="settled"),
    ],
)
def test_figures(field: str, expected: object) -> None:
    assert _record(MIXED)[field] == expected


def test_identity_and_variant() -> None:
    rec = _record(MIXED, _cell(scheduler=STALE_NRT, variant=Variant(exporter=False, lag=LAG_5S)))
    assert (rec["scheduler"], rec["scheduler_family"], rec["scenario"]) == (
        "reference-stale-nrt",
        "reference",
        "b",
    )
    assert (rec["variant"], rec["exporter"], rec["default_variant"]) == (
        "no-exporter-lag5",
        False,
        False,
    )
    assert rec["nrt_lag"] == "2s+U(0,6s)" and rec["trusts_stale_nrt"] is True


def test_the_record_is_json_and_every_field_is_documented_once() -> None:
    rec = _record(MIXED)
    assert json.loads(json.dumps(rec)) == rec
    names = [f.name for f in FIELDS]
    assert len(names) == len(set(names))
    assert set(rec) == {*names, "reproducer"}
    assert all(f.meaning for f in FIELDS)
    assert rec["reproducer"]["command"] == "make scorecard CELL=x"
    assert rec["reproducer"]["timeline"][1] == [2.5, "ran", "bound", "n1"]


def test_prediction_agreement_counts_zones_and_exact_predictions() -> None:
    cpu0 = placement(0, cpu="2", **{"nvidia.com/gpu": "1"})
    o = outcome(
        [
            pod("right", cpus="0-1", gpus=(gpu(0, 0),), predicted=cpu0),
            pod("mirrored", cpus="4-5", gpus=(gpu(1, 0),), predicted=cpu0),
            pod("unpredicted", cpus="2"),
        ]
    )
    rec = _record(o)
    assert (rec["predicted_pods"], rec["exact_predictions"]) == (2, 1)
    assert rec["prediction_agreement"] == 0.5


def test_a_rejection_without_the_kubelets_event_is_a_harness_problem() -> None:
    """Counted only if the kubelet of the node the pod is bound to recorded it, for the
    pod's uid - and every such record is counted."""
    refused = pod("refused", phase="Failed", reason="TopologyAffinityError")
    cases = {
        "recorded": [kubelet_rejection("refused")],
        "no-event": [],
        "other-node": [kubelet_rejection("refused", node="n2")],
        "other-uid": [kubelet_rejection("refused", uid="uid-old")],
    }
    found = {k: harness_problems(_record(outcome([refused], events=e))) for k, e in cases.items()}
    assert found["recorded"] == []
    assert all(len(found[k]) >= 1 for k in ("no-event", "other-node", "other-uid"))
    uncounted = outcome([pod("ran", cpus="0")], events=[kubelet_rejection("ran")])
    assert [p.split(":")[0] for p in harness_problems(_record(uncounted))] == [
        "rejections_without_kubelet_record"
    ]


def test_held_twice_is_a_harness_problem() -> None:
    o = outcome([pod("a", cpus="0")], double_allocations=("n1 cpu 0: held by a and b",))
    assert harness_problems(_record(o)) == ["held_twice: n1 cpu 0: held by a and b"]


def test_findings_are_filed_under_their_claim_and_counted_as_broken_only_if_claimed() -> None:
    """Scenario b's check belongs to the claim `aligned`; the reference scheduler makes
    it, an adapter without claims does not - the same finding, asserted for
    one and reported for the other."""
    finding = replace(SCENARIOS["b"], check=lambda o: ["two ran, three expected"])
    o = outcome([pod("x", cpus="0")])
    claimed = _record(o, _cell(finding, RECONSTRUCTION))
    unclaimed = _record(o, _cell(finding, replace(RECONSTRUCTION, claims=frozenset())))
    assert claimed["findings"][Claim.ALIGNED.value] == ["two ran, three expected"]
    assert broken_claims(claimed) == ["aligned: two ran, three expected"]
    assert broken_claims(unclaimed) == [] and all_findings(unclaimed) == all_findings(claimed)


def test_a_run_that_did_not_settle_is_a_finding_of_its_scenarios_claim() -> None:
    rec = _record(outcome([pod("x", cpus="0")], settled=False))
    assert rec["findings"]["aligned"] == ["did not settle in 120 s"]


@pytest.mark.parametrize(
    ("scenario", "claimed_by", "filed_under"),
    [
        pytest.param("b", RECONSTRUCTION, "exact-prediction", id="predictable-and-claimed"),
        pytest.param("d", STALE_NRT, "unclaimable", id="churn-nobody-can-promise"),
        pytest.param("h", RECONSTRUCTION, "unclaimable", id="churn-even-if-lag-safe"),
    ],
)
def test_a_wrong_prediction_is_filed_by_whether_it_could_be_exact(
    scenario: str, claimed_by: Adapter, filed_under: str
) -> None:
    wrong = pod("w", cpus="4-5", predicted=placement(0, cpu="2", memory=MIB256))
    rec = _record(
        outcome([wrong]), _cell(replace(SCENARIOS[scenario], check=lambda o: []), claimed_by)
    )
    assert [k for k, v in rec["findings"].items() if v] == [filed_under]


def test_numa_reason_is_required_only_where_every_unbound_pod_fits_a_node() -> None:
    """In a and b an unbound pod fits some node as a whole: the report must name NUMA; in
    g any report will do (the pod may simply not fit)."""
    waiting = pod("p", node=None, phase="Pending")
    insufficient = scheduler_event("p", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    o = outcome([waiting], events=[insufficient])
    in_b = _record(o, _cell(QUIET_B))
    in_g = _record(o, _cell(replace(SCENARIOS["g"], check=lambda o: [])))
    assert in_b["unreported_pending"] == 1 and in_g["unreported_pending"] == 0


def test_a_cell_that_did_not_run_records_the_error_as_a_harness_problem() -> None:
    rec = failed_record(_cell(), "AssertionError: scheduler exited", command="c")
    assert harness_problems(rec) == ["error: AssertionError: scheduler exited"]
    assert "submitted" not in rec and rec["scenario"] == "b"


def test_a_pod_someone_deleted_still_counts_and_is_a_finding() -> None:
    """A scheduler deleting its pods (KAI cleaning up a rejected one) does not make them
    vanish from the figures: a deleted pod the kubelet had rejected (its event says so,
    though the harness never saw the Failed status) is a TopologyAffinityError, and the
    deletion itself is a finding."""
    events = [kubelet_rejection("gone")]
    last_seen = deleted_as_seen(pod("gone", phase="Pending"), events)
    rec = _record(outcome([pod("ran", cpus="0")], deleted=[last_seen], events=events))
    assert (rec["submitted"], rec["topology_affinity_errors"], rec["bound"]) == (2, 1, 2)
    assert harness_problems(rec) == []
    assert "gone: deleted by someone else than the harness" in rec["findings"]["aligned"]
    not_rejected = deleted_as_seen(pod("quiet", phase="Running"), events)
    assert not_rejected["status"]["phase"] == "Running"


def test_docs_list_every_figure_of_a_record() -> None:
    """docs/scorecard.md's table of record keys is FIELDS, in order."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "scorecard.md").read_text()
    table = doc[doc.index("| key | meaning |") :].split("\n\n")[0]
    keys = re.findall(r"^\| `([a-z_]+)` \|", table, re.M)
    assert keys == [f.name for f in FIELDS]
