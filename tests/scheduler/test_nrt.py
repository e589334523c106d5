"""Reading NRT v1alpha2: policy/scope from attributes or the legacy list, zones, errors."""

from __future__ import annotations

from typing import Any

import pytest

from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.nrt import NRTError, read_nrt
from fakenrt.scheduler.plugin import NumaPlugin
from tests.scheduler.builders import GPU, guaranteed, nrt_object

ZONE = {"capacity": {"cpu": 8, GPU: 2}}


@pytest.mark.parametrize(
    ("policy", "scope", "legacy", "expected"),
    [
        pytest.param("restricted", "pod", (), ("restricted", "pod"), id="attributes"),
        pytest.param(
            None, None, ("Restricted",), ("restricted", "container"), id="legacy-no-scope"
        ),
        pytest.param(
            None, None, ("BestEffort",), ("best-effort", "container"), id="legacy-besteffort"
        ),
        pytest.param(
            None, None, ("SingleNUMANodePodLevel",), ("single-numa-node", "pod"), id="legacy-pod"
        ),
        pytest.param(
            None, None, ("RestrictedContainerLevel",), ("restricted", "container"), id="legacy-ctr"
        ),
        pytest.param(
            "single-numa-node",
            None,
            ("RestrictedPodLevel",),
            ("single-numa-node", "pod"),
            id="attribute-policy-wins-legacy-scope-fills",
        ),
        pytest.param("best-effort", None, (), ("best-effort", "container"), id="default-scope"),
        pytest.param(None, None, (), ("none", "container"), id="nothing-means-none"),
    ],
)
def test_policy_and_scope(
    policy: str | None, scope: str | None, legacy: tuple[str, ...], expected: tuple[str, str]
) -> None:
    topo = read_nrt(nrt_object("n", [ZONE], policy=policy, scope=scope, legacy=legacy))
    assert (topo.policy, topo.scope) == expected


def test_zones_sorted_by_numeric_id_and_non_numa_zones_ignored() -> None:
    obj = nrt_object("n", [ZONE, ZONE, ZONE], distances=[[10, 20, 30], [20, 10, 20], [30, 20, 10]])
    zones = obj["zones"]
    renamed = {"node-0": "node-10", "node-1": "node-1", "node-2": "node-2"}
    zones[0]["name"], zones[2]["name"] = "node-10", "node-2"
    for zone in zones:  # the costs name the zones as renamed (they must name its zones)
        for cost in zone.get("costs", []):
            cost["name"] = renamed[cost["name"]]
    zones.append({"name": "socket-0", "type": "Socket"})
    topo = read_nrt(obj)
    assert topo.zone_ids == (1, 2, 10)
    assert topo.reported == frozenset({"cpu", GPU})
    assert topo.zone(10).capacity == {"cpu": 8, GPU: 2}
    assert topo.distance(10, 2) == 30
    assert topo.distance(1, 1) == 10


def test_quantities_parse_and_default_distances() -> None:
    obj = nrt_object("n", [{"capacity": {"memory": "16Gi", "cpu": "8"}}])
    topo = read_nrt(obj)
    assert topo.zones[0].allocatable["memory"] == 16 * 1024**3
    assert topo.distance(0, 0) == 10


def _broken(mutate: Any) -> dict[str, Any]:
    obj = nrt_object("gpu-7", [ZONE])
    mutate(obj)
    return obj


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        pytest.param(
            lambda o: o["attributes"].__setitem__(
                0, {"name": "topologyManagerPolicy", "value": "x"}
            ),
            "attribute topologyManagerPolicy 'x'",
            id="bad-policy",
        ),
        pytest.param(
            lambda o: o.__setitem__("topologyPolicies", ["Strict"]),
            "topologyPolicies[0] 'Strict'",
            id="bad-legacy",
        ),
        pytest.param(
            lambda o: o["zones"][0]["resources"][0].pop("available"),
            "zones[0](node-0).resources[0]('cpu').available is required",
            id="missing-available",
        ),
        pytest.param(
            lambda o: o["zones"][0]["resources"][0].__setitem__("capacity", "lots"),
            "zones[0](node-0).resources[0]('cpu').capacity",
            id="bad-quantity",
        ),
        pytest.param(
            lambda o: o["zones"][0].__setitem__("name", "numa0"),
            "zones[0](numa0).name",
            id="bad-zone-name",
        ),
        pytest.param(
            lambda o: o["zones"][0].__setitem__("name", "node-64"),
            "zones[0](node-64).name: NUMA id 64 is above 63",
            id="numa-id-beyond-64-bit-mask",
        ),
        pytest.param(
            lambda o: o["zones"].append(dict(o["zones"][0])),
            "zone node-0 appears twice",
            id="duplicate-zone",
        ),
        pytest.param(lambda o: o.pop("zones"), "zones must be a list", id="no-zones"),
        pytest.param(
            lambda o: o.__setitem__("kind", "Node"), "expected kind NodeResourceTopology", id="kind"
        ),
    ],
)
def test_errors_name_source_node_and_field(mutate: Any, fragment: str) -> None:
    with pytest.raises(NRTError) as err:
        read_nrt(_broken(mutate), source="nrt.yaml")
    message = str(err.value)
    assert message.startswith("nrt.yaml:")
    assert fragment in message
    if "kind" not in fragment:
        assert "gpu-7" in message


def _with_attributes(**attrs: str) -> dict[str, Any]:
    obj = nrt_object("n", [{"capacity": {"cpu": 8, "memory": 8 * 1024**3, GPU: 2}}])
    obj["attributes"] += [{"name": k, "value": v} for k, v in attrs.items()]
    return obj


@pytest.mark.parametrize(
    ("attrs", "unaligned"),
    [
        pytest.param({}, set(), id="absent-assumed-aligned"),
        pytest.param(
            {"cpuManagerPolicy": "static", "memoryManagerPolicy": "Static"}, set(), id="static"
        ),
        pytest.param({"cpuManagerPolicy": "none"}, {"cpu"}, id="cpu-none"),
        pytest.param({"memoryManagerPolicy": "None"}, {"memory"}, id="memory-none"),
    ],
)
def test_manager_policies_say_what_is_not_aligned(
    attrs: dict[str, str], unaligned: set[str]
) -> None:
    topo = read_nrt(_with_attributes(**attrs))
    assert topo.unaligned == unaligned
    assert topo.cpu_manager_policy == attrs.get("cpuManagerPolicy")


def test_unknown_manager_policy_is_named() -> None:
    with pytest.raises(NRTError, match="attribute memoryManagerPolicy 'static' is not one of"):
        read_nrt(_with_attributes(memoryManagerPolicy="static"), source="f.yaml")


def test_plugin_does_not_align_memory_the_nrt_says_is_not_aligned() -> None:
    """Issue 11, item 4: a 2-zone single-numa-node node, 8Gi per zone, Memory Manager None:
    a pod of 12Gi fits (memory floats), without any ignoreList; without the attribute the
    plugin assumes memory is aligned and refuses it."""
    zone = {"capacity": {"cpu": 8, "memory": 8 * 1024**3, GPU: 2}}
    pod = guaranteed("p", cpu=2, memory="12Gi", gpu=1)
    for attrs, fit in (({"memoryManagerPolicy": "None"}, True), ({}, False)):
        obj = nrt_object("n", [zone, zone], policy="single-numa-node")
        obj["attributes"] += [{"name": k, "value": v} for k, v in attrs.items()]
        topo = read_nrt(obj)
        assert NumaPlugin().filter(pod, topo, ZoneLedger.from_nrt(topo)).fit is fit
