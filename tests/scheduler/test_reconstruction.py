"""Reconstructing free capacity from the node's pods: observed > predicted > nothing."""

from __future__ import annotations

import pytest

from exporter.annotations import (
    OBSERVED_MEMORY_GROUPS,
    OBSERVED_PLACEMENT,
    PREDICTED_MEMORY_GROUPS,
    PREDICTED_PLACEMENT,
)
from fakenrt.nrt import fingerprint
from fakenrt.scheduler.nrt import read_nrt
from fakenrt.scheduler.reconstruction import (
    NodePod,
    ReconstructionError,
    node_pod_from_manifest,
    reconstruct,
)
from tests.scheduler.builders import GI, GPU, container, nrt_object, pod_manifest, topology

ZONES = [
    {
        "capacity": {"cpu": 16, GPU: 4, "memory": 64 * GI},
        "available": {"cpu": 0, GPU: 0, "memory": 0},
    }
] * 2


def node_pod(name: str, annotations: dict[str, str], phase: str = "Running") -> NodePod:
    return node_pod_from_manifest(
        pod_manifest(
            name, [container("main", {"cpu": 1})], annotations=annotations, node="n1", phase=phase
        )
    )


OBS = '[{"zone":"node-0","amount":{"cpu":"8","nvidia.com/gpu":"2"}}]'
PRED = '[{"zone":"node-1","amount":{"cpu":"4"}}]'


def test_allocatable_minus_placements_ignoring_stale_nrt_available() -> None:
    topo = topology(ZONES)
    result = reconstruct(
        topo,
        [
            node_pod("observed", {OBSERVED_PLACEMENT: OBS, PREDICTED_PLACEMENT: PRED}),
            node_pod("predicted", {PREDICTED_PLACEMENT: PRED}),
            node_pod("unknown", {}),
            node_pod("done", {OBSERVED_PLACEMENT: OBS}, phase="Succeeded"),
            node_pod("failed", {PREDICTED_PLACEMENT: PRED}, phase="Failed"),
        ],
    )
    book = result.ledger
    assert book.free(0, "cpu") == 8 and book.free(0, GPU) == 2
    assert book.free(1, "cpu") == 12 and book.free(1, GPU) == 4
    assert book.free(0, "memory") == 64 * GI
    assert result.sources == {"default/observed": "observed", "default/predicted": "predicted"}
    assert result.unplaced == ("default/unknown",)


GROUP_80G = f'[{{"memoryNodes":["node-0","node-1"],"amount":{{"memory":"{80 * GI}"}}}}]'


@pytest.mark.parametrize(
    ("placement_key", "groups_key"),
    [
        pytest.param(OBSERVED_PLACEMENT, OBSERVED_MEMORY_GROUPS, id="observed"),
        pytest.param(PREDICTED_PLACEMENT, PREDICTED_MEMORY_GROUPS, id="predicted"),
    ],
)
def test_memory_groups_become_a_group_spread_lowest_zone_first(
    placement_key: str, groups_key: str
) -> None:
    """The observed and the predicted pair follow one rule: the group's bytes are in the
    groups annotation only, and fill its zones lowest id first."""
    topo = topology(ZONES)
    result = reconstruct(topo, [node_pod("big", {placement_key: "[]", groups_key: GROUP_80G})])
    book = result.ledger
    assert book.free(0, "memory") == 0
    assert book.free(1, "memory") == 48 * GI
    assert book.cells[0] == frozenset({0, 1}) and book.assignments[1] == 1


@pytest.mark.parametrize("scope", ["pod", "container"])
def test_predicted_per_zone_memory_is_single_numa_blocks(scope: str) -> None:
    """Per-zone memory of a placement annotation is single-NUMA blocks (interfaces.md), in
    either scope; a group is only what the groups annotation says."""
    pred = (
        '[{"zone":"node-0","amount":{"memory":"1024"}},'
        '{"zone":"node-1","amount":{"memory":"1024"}}]'
    )
    book = reconstruct(topology(ZONES, scope=scope), [node_pod("p", {PREDICTED_PLACEMENT: pred})])
    assert book.ledger.cells[0] == frozenset({0}) and book.ledger.cells[1] == frozenset({1})
    assert book.ledger.assignments == {0: 1, 1: 1}
    assert book.ledger.free(0, "memory") == 64 * GI - 1024


@pytest.mark.parametrize(
    ("annotations", "fragment"),
    [
        pytest.param(
            {OBSERVED_PLACEMENT: "{"},
            f"pod default/bad: annotation {OBSERVED_PLACEMENT}",
            id="json",
        ),
        pytest.param(
            {PREDICTED_PLACEMENT: '[{"zone":"node-5","amount":{"cpu":"1"}}]'},
            "zone node-5 is not a NUMA zone of n1",
            id="unknown-zone",
        ),
        pytest.param(
            {OBSERVED_PLACEMENT: "[]", OBSERVED_MEMORY_GROUPS: "[1]"},
            f"annotation {OBSERVED_MEMORY_GROUPS}",
            id="groups",
        ),
        pytest.param(
            {PREDICTED_PLACEMENT: "[]", PREDICTED_MEMORY_GROUPS: "[1]"},
            f"annotation {PREDICTED_MEMORY_GROUPS}",
            id="predicted-groups",
        ),
        pytest.param(
            {
                PREDICTED_MEMORY_GROUPS: (
                    '[{"memoryNodes":["node-0","node-7"],"amount":{"memory":"1"}}]'
                )
            },
            "zone node-7 is not a NUMA zone of n1",
            id="predicted-groups-unknown-zone",
        ),
    ],
)
def test_bad_annotations_are_named_in_strict_mode(
    annotations: dict[str, str], fragment: str
) -> None:
    with pytest.raises(ReconstructionError, match="pod default/bad") as err:
        reconstruct(topology(ZONES), [node_pod("bad", annotations)])
    assert fragment in str(err.value)


@pytest.mark.parametrize(
    ("observed", "field"),
    [
        pytest.param({OBSERVED_PLACEMENT: "{"}, OBSERVED_PLACEMENT, id="placement"),
        pytest.param({OBSERVED_MEMORY_GROUPS: "{"}, OBSERVED_MEMORY_GROUPS, id="groups-only"),
    ],
)
def test_lenient_mode_falls_back_to_predicted_and_reports(
    observed: dict[str, str], field: str
) -> None:
    pods = [node_pod("bad", {**observed, PREDICTED_PLACEMENT: PRED})]
    result = reconstruct(topology(ZONES), pods, strict=False)
    assert result.sources == {"default/bad": "predicted"}
    assert result.ledger.free(1, "cpu") == 12
    assert result.unplaced == ()
    assert len(result.problems) == 1
    assert f"annotation {field}" in result.problems[0] and "not JSON" in result.problems[0]


def test_lenient_mode_with_no_usable_source_leaves_the_pod_unplaced() -> None:
    pods = [node_pod("bad", {OBSERVED_PLACEMENT: "{", PREDICTED_PLACEMENT: "["})]
    result = reconstruct(topology(ZONES), pods, strict=False)
    assert result.sources == {}
    assert result.unplaced == ("default/bad",)
    assert len(result.problems) == 2
    assert result.ledger.free(0, "cpu") == 16 and result.ledger.free(1, "cpu") == 16


def test_memory_groups_alone_mean_observed() -> None:
    """A pod whose only aligned memory is a multi-zone group gets no placement annotation,
    only the groups one: it is observed, and its group is charged."""
    groups = f'[{{"memoryNodes":["node-0","node-1"],"amount":{{"memory":"{4 * GI}"}}}}]'
    result = reconstruct(topology(ZONES), [node_pod("grouped", {OBSERVED_MEMORY_GROUPS: groups})])
    assert result.sources == {"default/grouped": "observed"}
    assert result.ledger.free(0, "memory") == 60 * GI
    assert result.ledger.cells[1] == frozenset({0, 1})


def test_complete_empty_groups_mean_nothing_held_and_null_means_not_observed() -> None:
    pods = [
        node_pod("plain", {OBSERVED_MEMORY_GROUPS: "[]"}),
        node_pod("pending", {OBSERVED_MEMORY_GROUPS: "null", PREDICTED_PLACEMENT: PRED}),
        node_pod("unknown", {OBSERVED_MEMORY_GROUPS: "null"}),
    ]
    result = reconstruct(topology(ZONES), pods)
    assert result.sources == {"default/plain": "observed", "default/pending": "predicted"}
    assert result.unplaced == ("default/unknown",)


def test_a_current_nrt_keeps_what_it_holds_beyond_the_visible_pods() -> None:
    """Issue 11, item 1: the NRT fingerprint matches the pods on the node, so NRT available
    is the truth - capacity held outside the scheduler's view (here 2 GPUs NRT shows used
    on zone 0 that no annotation explains) is kept; with another pod set it is not
    current, and the pod at unknown zones makes the node defer NUMA-sensitive pods."""
    zones = [
        {"capacity": {"cpu": 16, GPU: 4}, "available": {"cpu": 16, GPU: 2}},
        {"capacity": {"cpu": 16, GPU: 4}},
    ]
    foreign = node_pod_from_manifest(
        pod_manifest("foreign", [container("main", {"cpu": 1, "memory": "1Gi", GPU: 2})], node="n1")
    )
    for pods, exact in (([("default", "foreign")], True), ([], False)):
        obj = nrt_object("n1", zones)
        obj["attributes"] += [
            {"name": "nodeTopologyPodsFingerprint", "value": fingerprint(pods)},
            {"name": "nodeTopologyPodsFingerprintMethod", "value": "with-exclusive-resources"},
        ]
        result = reconstruct(read_nrt(obj), [foreign])
        assert result.nrt_exact is exact
        if exact:
            assert result.ledger.free(0, GPU) == 2 and result.unaccounted == ()
        else:
            assert result.ledger.free(0, GPU) == 4
            assert result.unaccounted == result.ledger.unaccounted == ("default/foreign",)


@pytest.mark.parametrize(
    ("init", "apps", "kept"),
    [
        pytest.param([], [container("main", {GPU: 1, "cpu": 2, "memory": GI})], False,
                     id="no-init"),
        pytest.param([container("pre", {GPU: 2})], [container("main", {"cpu": 1})], True,
                     id="init-gpus-nobody-reuses"),
        pytest.param([container("pre", {GPU: 2})], [container("main", {GPU: 2})], False,
                     id="app-reuses-all-gpus"),
        pytest.param([container("pre", {GPU: 2})],
                     [container("a", {GPU: 1}), container("b", {GPU: 1})], False,
                     id="two-apps-reuse-all"),
        pytest.param([container("pre", {GPU: 3})], [container("main", {GPU: 2})], True,
                     id="one-gpu-left"),
        pytest.param([container("pre", {"cpu": 4, "memory": GI})],
                     [container("main", {"cpu": 2, "memory": GI})], True,
                     id="guaranteed-init-cpus-beyond-the-app"),
        pytest.param([container("pre", {"cpu": 2, "memory": 2 * GI})],
                     [container("main", {"cpu": 2, "memory": 2 * GI})], False,
                     id="guaranteed-app-reuses-cpus-and-memory"),
        pytest.param([container("side", {GPU: 2}, restart_always=True)],
                     [container("main", {"cpu": 1})], False,
                     id="sidecar-is-listed-not-kept"),
        pytest.param([container("pre", {GPU: 2}), container("side", {GPU: 2}, restart_always=True)],
                     [container("main", {"cpu": 1})], False,
                     id="sidecar-after-init-reuses"),
        pytest.param([container("pre", {"example.com/nic": 2})], [container("main", {"cpu": 1})],
                     False, id="device-no-zone-reports"),
    ],
)  # fmt: skip
def test_observed_pods_whose_init_containers_keep_resources_are_unaccounted(
    init: list[dict[str, object]], apps: list[dict[str, object]], kept: bool
) -> None:
    """podresources does not list regular init containers: what one keeps beyond what the
    later containers take over is at zones no observed annotation reports."""
    pod = node_pod_from_manifest(
        pod_manifest("p", apps, init=init, annotations={OBSERVED_PLACEMENT: "[]"}, node="n1",
                     phase="Running")
    )  # fmt: skip
    result = reconstruct(topology(ZONES), [pod])
    assert result.sources == {"default/p": "observed"}
    assert result.unaccounted == (("default/p",) if kept else ())
    assert result.ledger.unaccounted == result.unaccounted
