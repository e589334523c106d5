"""render_nrt: the NRT object a profile and its per-zone use give."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from fakenrt.nrt import legacy_topology_policy, render_nrt
from fakenrt.nrt.fingerprint import fingerprint
from fakenrt.profiles import NodeProfile, example_profile, load_profiles, parse_profiles

CRD = Path(__file__).resolve().parents[2] / "manifests" / "crds" / "noderesourcetopology.yaml"
GI = 2**30


def _dgx() -> NodeProfile:
    return load_profiles(example_profile("dgx"))[0]


def _resources(nrt: dict[str, Any], zone: str) -> dict[str, tuple[str, str, str]]:
    (found,) = [z for z in nrt["zones"] if z["name"] == zone]
    return {
        r["name"]: (r["capacity"], r["allocatable"], r["available"]) for r in found["resources"]
    }


def _attributes(nrt: dict[str, Any]) -> dict[str, str]:
    return {a["name"]: a["value"] for a in nrt["attributes"]}


def test_dgx_before_any_pod() -> None:
    nrt = render_nrt(_dgx(), usage=None)
    assert nrt["apiVersion"] == "topology.node.k8s.io/v1alpha2"
    assert nrt["kind"] == "NodeResourceTopology"
    assert nrt["metadata"] == {"name": "dgx-a"}
    assert nrt["topologyPolicies"] == ["RestrictedContainerLevel"]
    assert [(z["name"], z["type"]) for z in nrt["zones"]] == [
        ("node-0", "Node"),
        ("node-1", "Node"),
    ]
    assert [z["costs"] for z in nrt["zones"]] == [
        [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 20}],
        [{"name": "node-0", "value": 20}, {"name": "node-1", "value": 10}],
    ]
    # capacity counts reserved CPUs (0 and 64 are on zone 0) and unhealthy devices;
    # allocatable drops them; available also drops the zone's foreign `allocated`
    assert _resources(nrt, "node-0") == {
        "cpu": ("64", "62", "54"),
        "example.com/fpga": ("2", "1", "1"),
        "hugepages-1Gi": (str(16 * GI), str(16 * GI), str(16 * GI)),
        "memory": (str(512 * GI), str(512 * GI), str(448 * GI)),
        "nvidia.com/gpu": ("4", "4", "3"),
        "rdma/hca": ("2", "2", "2"),
    }
    assert _resources(nrt, "node-1") == {
        "cpu": ("64", "64", "64"),
        "memory": (str(512 * GI), str(512 * GI), str(512 * GI)),
        "nvidia.com/gpu": ("4", "4", "4"),
    }
    # resources sorted by name; the no-affinity license devices are in no zone
    for zone in nrt["zones"]:
        names = [r["name"] for r in zone["resources"]]
        assert names == sorted(names)
        assert "example.com/license" not in names
    assert _attributes(nrt) == {
        "topologyManagerPolicy": "restricted",
        "topologyManagerScope": "container",
        "cpuManagerPolicy": "static",
        "memoryManagerPolicy": "Static",
        "nodeTopologyPodsFingerprint": fingerprint([]),
        "nodeTopologyPodsFingerprintMethod": "with-exclusive-resources",
    }


def test_usage_replaces_the_foreign_allocation_and_pods_make_the_fingerprint() -> None:
    usage = {0: {"cpu": 10, "nvidia.com/gpu": 4, "memory": 64 * GI}, 1: {"cpu": 24}}
    pods = ["team-a/train-0", "team-b/infer-1"]
    nrt = render_nrt(_dgx(), usage=usage, pods=pods)
    zone0, zone1 = _resources(nrt, "node-0"), _resources(nrt, "node-1")
    assert zone0["cpu"][2] == "52"
    assert zone0["nvidia.com/gpu"][2] == "0"
    assert zone0["memory"][2] == str(448 * GI)
    assert zone0["example.com/fpga"][2] == "1"  # untouched resources stay at allocatable
    assert zone1["cpu"][2] == "40"
    assert zone1["nvidia.com/gpu"][2] == "4"
    assert _attributes(nrt)["nodeTopologyPodsFingerprint"] == fingerprint(
        [("team-a", "train-0"), ("team-b", "infer-1")]
    )


def test_available_never_goes_negative() -> None:
    nrt = render_nrt(_dgx(), usage={1: {"nvidia.com/gpu": 9}})
    assert _resources(nrt, "node-1")["nvidia.com/gpu"] == ("4", "4", "0")


def test_usage_of_an_unknown_zone_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"usage names zones \[7\] that node dgx-a lacks"):
        render_nrt(_dgx(), usage={7: {"cpu": 1}})


def test_default_costs_when_the_profile_gives_no_distances() -> None:
    small = load_profiles(example_profile("dgx"))[1]
    nrt = render_nrt(small, usage=None)
    assert [[c["value"] for c in z["costs"]] for z in nrt["zones"]] == [[10, 20], [20, 10]]


@pytest.mark.parametrize(
    ("policy", "scope", "legacy"),
    [
        pytest.param("none", "container", "None", id="none"),
        pytest.param("none", "pod", "None", id="none-pod"),
        pytest.param("best-effort", "container", "BestEffortContainerLevel", id="best-effort"),
        pytest.param("best-effort", "pod", "BestEffortPodLevel", id="best-effort-pod"),
        pytest.param("restricted", "container", "RestrictedContainerLevel", id="restricted"),
        pytest.param("restricted", "pod", "RestrictedPodLevel", id="restricted-pod"),
        pytest.param("single-numa-node", "container", "SingleNUMANodeContainerLevel", id="snn"),
        pytest.param("single-numa-node", "pod", "SingleNUMANodePodLevel", id="snn-pod"),
    ],
)
def test_policy_attributes_and_legacy_policies(policy: str, scope: str, legacy: str) -> None:
    assert legacy_topology_policy(policy, scope) == legacy
    data = {
        "nodes": [
            {
                "name": "n",
                "kubelet": {"topologyManagerPolicy": policy, "topologyManagerScope": scope},
                "zones": [{"id": 0, "cpus": "0-3", "memory": "1Gi"}],
            }
        ]
    }
    (profile,) = parse_profiles(data, source="p.yaml")
    nrt = render_nrt(profile, usage=None)
    assert nrt["topologyPolicies"] == [legacy]
    assert _attributes(nrt)["topologyManagerPolicy"] == policy
    assert _attributes(nrt)["topologyManagerScope"] == scope


# --- the CRD's own schema ---------------------------------------------------------------


def _crd_schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def _check(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    """The subset of OpenAPI v3 validation the CRD uses: type, required, properties,
    items, anyOf, pattern, and int-or-string."""
    problems: list[str] = []
    if "anyOf" in schema and all(_check(value, option, path) for option in schema["anyOf"]):
        problems.append(f"{path}: matches no anyOf branch")
    kind = schema.get("type")
    checks = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    }
    if kind is not None and not checks[kind](value):
        return [*problems, f"{path}: not a {kind}"]
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        problems.append(f"{path}: {value!r} does not match the quantity pattern")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                problems.append(f"{path}.{key}: required")
        properties = schema.get("properties")
        for key, item in value.items():
            if properties is not None:
                if key not in properties:
                    problems.append(f"{path}.{key}: not in the schema (would be pruned)")
                else:
                    problems.extend(_check(item, properties[key], f"{path}.{key}"))
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problems.extend(_check(item, schema["items"], f"{path}[{i}]"))
    return problems


def test_checker_catches_a_bad_object() -> None:
    bad = {"zones": [{"name": "node-0", "resources": [{"name": "cpu", "capacity": "x1"}]}]}
    problems = _check(bad, _crd_schema(), "nrt")
    assert "nrt.zones[0].type: required" in problems
    assert "nrt.zones[0].resources[0].available: required" in problems
    assert any("does not match the quantity pattern" in p for p in problems)


@pytest.mark.parametrize("example", ["dgx", "shapes"])
def test_rendered_objects_follow_the_crd_schema(example: str) -> None:
    schema = _crd_schema()
    for profile in load_profiles(example_profile(example)):
        assert _check(render_nrt(profile, usage=None, pods=["a/b"]), schema, "nrt") == []


def test_topology_policies_can_be_left_out() -> None:
    (profile, *_) = load_profiles(example_profile("dgx"))
    with_field = render_nrt(profile, usage=None)
    without = render_nrt(profile, usage=None, topology_policies=False)
    assert "topologyPolicies" not in without
    assert {k: v for k, v in with_field.items() if k != "topologyPolicies"} == without
