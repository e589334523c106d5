"""The DRA mode of ``fakenrt simulate``: GPU requests become ResourceClaims on DRA GPU
nodes, the stock allocator's first free devices, the kubelet prepares them unaligned, and
every strategy counts the pods that ran misaligned by the exporter's rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from fakenrt.cli import main
from fakenrt.simulate.admissible import never_admissible
from fakenrt.simulate.columns import DRA
from fakenrt.simulate.dra import DraGpus, gpu_driver
from fakenrt.simulate.engine import simulate
from fakenrt.simulate.report import html, table
from fakenrt.simulate.results import document
from fakenrt.simulate.scenario import ScenarioError
from fakenrt.simulate.strategies import BY_NAME, NAMES
from tests.simulate.builders import TWO_ZONES_SNN, pod, profiles, scenario, workload

DOCS = Path(__file__).resolve().parents[2] / "docs" / "simulate.md"

#: Two zones of 4 CPUs; gpu-0, gpu-1 on NUMA node 0, gpu-2, gpu-3 on NUMA node 1.
DRA_NODE = """
nodes:
- name: d1
  kubelet: {topologyManagerPolicy: single-numa-node}
  shape:
    numaNodes: 2
    coresPerNumaNode: 4
    threadsPerCore: 1
    memoryPerNumaNode: 64Gi
    draDevicesPerNumaNode: {gpu.nvidia.com: 2}
"""

#: The DRA node beside a device-plugin node with the same zones.
MIXED = DRA_NODE + TWO_ZONES_SNN.replace("nodes:\n", "")


def _figures(text: str, items: Any, strategy: str = "oracle", **kw: Any) -> dict[str, Any]:
    result = simulate(scenario(profiles(text), items, dra=True, **kw), BY_NAME[strategy])
    return dict(result.figures)


# Each pod runs long enough to hold its CPUs and GPU until the end. The kubelet puts the
# CPUs and memory where they fit on one NUMA node; the allocator hands out gpu-0, gpu-1,
# gpu-2, ... in order, wherever the CPUs are.
CASES = [
    # a: CPUs on NUMA 0 (the first of equals), gpu-0 on NUMA 0 - aligned.
    ("one pod, first device on the first node", [(0, pod("a", cpu=2, gpu=1))], 1, 0),
    # b: zone 0 has 2 CPUs left, b needs 4 -> NUMA 1; it gets gpu-1 (NUMA 0).
    (
        "CPUs forced to NUMA 1, device from NUMA 0",
        [(0, pod("a", cpu=2, gpu=1)), (10, pod("b", cpu=4, gpu=1))],
        2,
        1,
    ),
    # c: only zone 0 has CPUs left -> NUMA 0; the first free device is gpu-2 (NUMA 1).
    (
        "devices of NUMA 0 used up, CPUs on NUMA 0",
        [(0, pod("a", cpu=2, gpu=1)), (10, pod("b", cpu=4, gpu=1)), (20, pod("c", cpu=2, gpu=1))],
        3,
        2,
    ),
    # Two GPUs on NUMA 0 for a pod whose CPUs the kubelet puts on NUMA 0: aligned.
    ("a two-GPU claim on the CPUs' node", [(0, pod("a", cpu=3, gpu=2))], 1, 0),
    # The second pod's CPUs go to NUMA 0 (1 CPU left there) ... it gets gpu-2, gpu-3.
    (
        "a two-GPU claim after the first node's devices went",
        [(0, pod("a", cpu=3, gpu=2)), (10, pod("b", cpu=1, gpu=2))],
        2,
        1,
    ),
    # CPU-only pods hold no DRA device: not DRA pods, never misaligned.
    ("CPU-only pods", [(0, pod("a", cpu=2)), (10, pod("b", cpu=4))], 0, 0),
]


@pytest.mark.parametrize("strategy", NAMES)
@pytest.mark.parametrize(
    ("pods", "ran", "misaligned"),
    [pytest.param(p, r, m, id=name) for name, p, r, m in CASES],
)
def test_misaligned_is_the_first_free_device_against_the_kubelets_cpus(
    strategy: str, pods: list[tuple[float, dict[str, Any]]], ran: int, misaligned: int
) -> None:
    items = workload(*((at, 7200, manifest) for at, manifest in pods))
    f = _figures(DRA_NODE, items, strategy, duration=3600.0)
    assert (f["dra_pods"], f["misaligned"]) == (ran, misaligned)
    assert f["misaligned_share"] == (round(misaligned / ran, 4) if ran else 0.0)
    assert f["topology_affinity_errors"] == 0


def test_devices_are_free_again_when_the_pod_ends() -> None:
    # a (gpu-0) ends at 100 s; b then gets gpu-0 again, on its CPUs' NUMA node 0.
    items = workload((0, 100, pod("a", cpu=2, gpu=1)), (200, 7200, pod("b", cpu=2, gpu=1)))
    f = _figures(DRA_NODE, items, duration=3600.0)
    assert (f["dra_pods"], f["misaligned"], f["completed"]) == (2, 0, 1)


def test_the_scheduler_counts_the_dra_gpus_and_nothing_else_places_them() -> None:
    # 4 DRA GPUs: a fifth single-GPU pod waits, as on a device-plugin node of 4 GPUs.
    items = workload(*((i, 7200, pod(f"p{i}", cpu=1, gpu=1)) for i in range(5)))
    f = _figures(DRA_NODE, items, duration=3600.0)
    assert (f["binds"], f["dra_pods"], f["pending_at_end"]) == (4, 4, 1)


def test_a_mixed_fleet_claims_only_on_the_dra_node() -> None:
    # numa-blind sends ties to the first node by name: d1 (DRA), then n1 once d1 is full.
    items = workload(*((i, 7200, pod(f"p{i}", cpu=1, gpu=2)) for i in range(4)))
    result = simulate(scenario(profiles(MIXED), items, dra=True), BY_NAME["numa-blind"])
    nodes = [p.node for p in result.outcomes.pods]
    assert nodes == ["d1", "d1", "n1", "n1"]
    assert result.figures["dra_pods"] == 2
    assert result.figures["gpu_hours"] > 0


def test_without_the_mode_nothing_changes_and_dra_gpus_are_not_counted() -> None:
    items = workload((0, 7200, pod("a", cpu=2, gpu=1)))
    result = simulate(scenario(profiles(MIXED), items), BY_NAME["oracle"])
    assert not {"dra_pods", "misaligned", "misaligned_share"} & set(result.figures)
    assert result.outcomes.pods[0].node == "n1"  # d1's GPUs need the DRA mode
    doc = document(scenario(profiles(MIXED), items), [result])
    assert "dra" not in doc["scenario"]["settings"]
    assert "dra" not in doc["scenario"]["as_run"]["settings"]
    assert "misaligned" not in table(doc)


def test_the_mode_needs_a_dra_gpu_node() -> None:
    with pytest.raises(ScenarioError, match=r"dra: no node of the scenario has DRA GPUs"):
        scenario(profiles(TWO_ZONES_SNN), workload((0, 10, pod("a", gpu=1))), dra=True)


def test_the_cli_refuses_the_mode_without_dra_nodes_in_one_line() -> None:
    result = CliRunner().invoke(main, ["simulate", "--dra", "--no-progress", "--json"])
    assert result.exit_code != 0
    assert "dra: no node of the scenario has DRA GPUs" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_never_admissible_on_dra_nodes_is_about_devices_and_cpus() -> None:
    items = workload(
        (0, 10, pod("fits", cpu=2, gpu=1)),
        (0, 10, pod("five", cpu=1, gpu=5)),
        (0, 10, pod("wide", cpu=6, gpu=1)),
    )
    found = {i.pods[0]: i for i in never_admissible(scenario(profiles(DRA_NODE), items, dra=True))}
    assert set(found) == {"t/five", "t/wide"}
    (five,) = found["t/five"].refusals
    assert (five.reason, five.message) == (
        "Unschedulable",
        "cannot allocate all claims: 5 devices of DeviceClass gpu.nvidia.com asked, the node has 4",
    )
    assert found["t/wide"].refusals[0].reason == "TopologyAffinityError"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.integers(min_value=0, max_value=3)), min_size=1, max_size=40
    )
)
def test_the_allocator_takes_the_first_free_devices_and_never_shares_one(
    steps: list[tuple[bool, int]],
) -> None:
    """Against a model: a bind takes the first free devices in slice order; a release frees
    exactly the pod's."""
    nodes = {p.name: p for p in profiles(DRA_NODE)}
    dra = DraGpus(nodes)
    order = [d.name for d in dra.drivers["d1"].devices]
    model: dict[str, list[str]] = {}
    for n, (bind, size) in enumerate(steps):
        if bind or not model:
            used = {d for held in model.values() for d in held}
            free = [d for d in order if d not in used]
            gpus = size + 1
            if gpus > len(free):
                continue
            manifest = pod(f"p{n}", gpu=gpus)
            manifest["metadata"]["uid"] = f"u{n}"
            bound, events = dra.bind(manifest, "d1")
            added = [c for kind, c in events if kind == "ADDED"]
            (claim,) = added
            got = [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]]
            assert got == free[:gpus]
            model[f"t/p{n}"] = got
            limits = bound["spec"]["containers"][0]["resources"]["limits"]
            assert "nvidia.com/gpu" not in limits
            assert bound["spec"]["resourceClaims"] == [
                {"name": "gpu-main", "resourceClaimName": claim["metadata"]["name"]}
            ]
        else:
            key = sorted(model)[size % len(model)]
            dra.released("d1", key)
            del model[key]
        assert {k: list(v) for k, v in dra.held["d1"].items()} == model


def test_a_device_plugin_gpu_takes_precedence_over_dra_gpus() -> None:
    both = DRA_NODE.replace(
        "draDevicesPerNumaNode: {gpu.nvidia.com: 2}",
        "draDevicesPerNumaNode: {gpu.nvidia.com: 2}\n    devicesPerNumaNode: {nvidia.com/gpu: 1}",
    )
    (node,) = profiles(both)
    assert gpu_driver(node) is None
    (dra_only,) = profiles(DRA_NODE)
    assert gpu_driver(dra_only) is not None


def test_the_dra_columns_are_in_the_table_report_help_json_and_docs() -> None:
    items = workload((0, 7200, pod("a", cpu=2, gpu=1)), (10, 7200, pod("b", cpu=4, gpu=1)))
    base = scenario(profiles(DRA_NODE), items, dra=True, duration=3600.0)
    results = [simulate(base, BY_NAME[n]) for n in ("nrt-trust", "oracle")]
    doc = document(base, results)
    out = table(doc)
    page = html(doc)
    helped = " ".join(CliRunner().invoke(main, ["simulate", "--help"]).output.split())
    docs = DOCS.read_text()
    assert "strategy   DRA pods  misaligned  misaligned share" in out
    assert "oracle            2           1             50.0%" in out
    assert "Of the 2 pods that started with DRA GPUs, 1 (50.0%) ran" in page
    for column in DRA:
        assert f"{column.header} {column.meaning}" in helped
        assert f"<dt>{column.header} <code>{column.key}</code></dt>" in page
        assert f"| {column.header} | `{column.key}` |" in docs
    data = json.loads(json.dumps(doc))
    assert data["strategies"]["oracle"]["misaligned"] == 1
    assert data["scenario"]["as_run"]["settings"]["dra"] is True
