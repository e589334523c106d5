"""Profile ``nrt`` switches: fingerprintTerminatedPods, topologyPolicies, and the other
agents' formats (volcano, koordlet)."""

from __future__ import annotations

from typing import Any

import pytest

from fakenrt.profiles import ProfileError, parse_profiles


def _node(nrt: Any) -> dict[str, Any]:
    return {
        "nodes": [
            {
                "name": "n",
                "shape": {"numaNodes": 2, "coresPerNumaNode": 2, "memoryPerNumaNode": "1Gi"},
                "nrt": nrt,
            }
        ]
    }


@pytest.mark.parametrize(
    ("nrt", "terminated", "policies"),
    [
        pytest.param({}, None, None, id="unset-controller-decides"),
        pytest.param({"fingerprintTerminatedPods": True}, True, None, id="old-kubelet"),
        pytest.param({"topologyPolicies": False}, None, False, id="no-legacy-field"),
        pytest.param(
            {"delay": "1s", "fingerprintTerminatedPods": False, "topologyPolicies": True},
            False,
            True,
            id="with-lag",
        ),
    ],
)
def test_switches(nrt: dict[str, Any], terminated: bool | None, policies: bool | None) -> None:
    (profile,) = parse_profiles(_node(nrt), source="p.yaml")
    assert profile.nrt_fingerprint_terminated_pods is terminated
    assert profile.nrt_topology_policies is policies


@pytest.mark.parametrize(
    ("nrt", "volcano", "koordlet"),
    [
        pytest.param({}, None, None, id="unset-controller-decides"),
        pytest.param({"volcano": True}, True, None, id="volcano"),
        pytest.param({"koordlet": True, "volcano": False}, False, True, id="koordlet"),
    ],
)
def test_agent_formats(nrt: dict[str, Any], volcano: bool | None, koordlet: bool | None) -> None:
    (profile,) = parse_profiles(_node(nrt), source="p.yaml")
    assert profile.nrt_volcano is volcano
    assert profile.nrt_koordlet is koordlet


@pytest.mark.parametrize(
    ("nrt", "field"),
    [
        pytest.param({"fingerprintTerminatedPods": "yes"}, "fingerprintTerminatedPods", id="str"),
        pytest.param({"topologyPolicies": 1}, "topologyPolicies", id="int"),
        pytest.param({"topologyPolicy": False}, "topologyPolicy", id="unknown-key"),
        pytest.param({"volcano": "on"}, "volcano", id="volcano-str"),
        pytest.param({"koordlet": 1}, "koordlet", id="koordlet-int"),
    ],
)
def test_bad_switch_names_file_node_and_field(nrt: dict[str, Any], field: str) -> None:
    with pytest.raises(ProfileError) as err:
        parse_profiles(_node(nrt), source="p.yaml")
    message = str(err.value)
    assert "p.yaml" in message and field in message and "nrt" in message
