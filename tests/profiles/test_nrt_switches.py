"""Profile ``nrt`` switches: fingerprintTerminatedPods and topologyPolicies."""

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
    ("nrt", "field"),
    [
        pytest.param({"fingerprintTerminatedPods": "yes"}, "fingerprintTerminatedPods", id="str"),
        pytest.param({"topologyPolicies": 1}, "topologyPolicies", id="int"),
        pytest.param({"topologyPolicy": False}, "topologyPolicy", id="unknown-key"),
    ],
)
def test_bad_switch_names_file_node_and_field(nrt: dict[str, Any], field: str) -> None:
    with pytest.raises(ProfileError) as err:
        parse_profiles(_node(nrt), source="p.yaml")
    message = str(err.value)
    assert "p.yaml" in message and field in message and "nrt" in message
