"""The runner against the real control plane: cells at once on one API server, each on its
own nodes with its own scheduler instance; a cell the harness cannot run is recorded and
the others go on; the scorecard files are written."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from exporter.kubeclient import KubeClient
from schedulers.adapter import Adapter, Component
from schedulers.reference import RECONSTRUCTION, STALE_NRT
from tests.controlplane.cluster import ControlPlane
from tests.e2e.deployment import Deployment, ProcessDeployment, Topology
from tests.e2e.scenarios import SCENARIOS
from tests.e2e.variants import LAG_NONE, Variant
from tests.scorecard.matrix import Cell
from tests.scorecard.runner import Cluster, run_cells, write

pytestmark = pytest.mark.controlplane

#: A scheduler whose only component exits at once.
BROKEN = replace(
    RECONSTRUCTION,
    mode="broken",
    default=False,
    components=(Component(name="scheduler", command="sh -c 'echo giving up; exit 3'"),),
)


def test_cells_run_at_once_and_a_broken_one_does_not_stop_the_others(
    control_plane: ControlPlane, kube: KubeClient, nrt_crd: list[str], tmp_path: Path
) -> None:
    def backend(topology: Topology, scheduler: Adapter, controller: str) -> Deployment:
        return ProcessDeployment(
            kube=kube,
            kubeconfig=control_plane.kubeconfig,
            topology=topology,
            scheduler=scheduler,
            controller_name=controller,
        )

    no_exporter = Variant(exporter=False, lag=LAG_NONE)
    cells = [
        Cell(RECONSTRUCTION, SCENARIOS["b"], SCENARIOS["b"].default_variant),
        Cell(STALE_NRT, SCENARIOS["c"], no_exporter),
        Cell(BROKEN, SCENARIOS["e"], SCENARIOS["e"].default_variant),
    ]
    progress = io.StringIO()
    records = run_cells(
        cells, clusters=[Cluster(kube, backend)], rerun=lambda c: f"rerun {c.id}", jobs=3,
        progress=progress,
    )  # fmt: skip
    b, c, broken = records
    assert (b["running"], b["pending"], b["topology_affinity_errors"]) == (2, 1, 0)
    assert b["harness_problems"] == {k: [] for k in b["harness_problems"]}
    assert b["reproducer"]["command"] == "rerun reference-reconstruction/b/exporter-lag0"
    assert [line[2] for line in b["reproducer"]["timeline"]].count("submitted") == 3
    # Without the exporter the harness waits for no observation.
    assert c["exporter"] is False and (c["submitted"], c["running"]) == (2, 2)
    assert c["harness_problems"]["exporter_disagrees"] == [] and c["settled"]
    assert "submitted" not in broken
    assert "exited" in broken["harness_problems"]["error"][0]
    assert progress.getvalue().count("\n") == 3

    verdicts = write(tmp_path, records, (RECONSTRUCTION, STALE_NRT), facts={"matrix": "test"})
    document = json.loads((tmp_path / "scorecard.json").read_text())
    assert [r["scenario"] for r in document["records"]] == ["b", "c", "e"]
    assert {v["id"]: v["passed"] for v in document["assertions"]}["harness"] is False
    # stale-nrt-caught: its cell (d) was not run.
    assert [v.id for v in verdicts if v.passed is False] == ["harness", "stale-nrt-caught"]
    page = (tmp_path / "scorecard.html").read_text()
    assert "reference-broken" in page and "did not run" in page
