"""Node registration against the real API server: owned nodes created and kept, foreign
nodes never touched, removal limited to the controller's own nodes."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import NotFound
from fakenrt.controller.nodeobjects import (
    CONTROLLER_LABEL,
    FAKE_NODE_LABEL,
    TAINT_KEY,
    NodeIdentity,
    merged_taints,
    owned_taint,
)
from fakenrt.controller.registration import register_nodes, remove_nodes
from tests.controller.conftest import make_profiles, two_numa_profile, unique
from tests.controlplane.helpers import create_fake_node

pytestmark = pytest.mark.controlplane


def _node(kube: KubeClient, name: str) -> dict[str, Any]:
    return kube.get(path("api", "v1", "nodes", name))


@pytest.mark.parametrize(
    "taint", [pytest.param(True, id="tainted"), pytest.param(False, id="untainted")]
)
def test_creates_owned_nodes_with_capacity_status_and_taint(kube: KubeClient, taint: bool) -> None:
    controller = unique("ctl")
    raw = two_numa_profile(unique("fake"), gpus=3)
    raw["shape"]["hugepagesPerNumaNode"] = {"hugepages-1Gi": "4Gi"}
    raw["devices"] = {"example.com/license": 2}
    raw["kubelet"] = {"topologyManagerPolicy": "restricted", "reservedSystemCPUs": "0"}
    profiles = make_profiles(raw)
    identities = [(p, NodeIdentity(p.name, i)) for i, p in enumerate(profiles)]
    reg = register_nodes(kube, identities, controller=controller, taint=taint, now=time.time())
    name = profiles[0].name
    assert set(reg.node_uids) == {name} and reg.foreign == ()
    node = _node(kube, name)
    labels = node["metadata"]["labels"]
    assert labels[FAKE_NODE_LABEL] == "true" and labels[CONTROLLER_LABEL] == controller
    taints = node["spec"].get("taints", [])
    assert taints == (
        [{"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}] if taint else []
    )
    status = node["status"]
    assert status["capacity"]["nvidia.com/gpu"] == "6"
    assert status["capacity"]["cpu"] == "8" and status["allocatable"]["cpu"] == "7"  # reserved
    assert status["allocatable"]["hugepages-1Gi"] == str(8 * 2**30)
    assert status["allocatable"]["example.com/license"] == "2"  # no NUMA affinity
    assert status["allocatable"]["memory"] == str(16 * 2**30)
    ready = [c for c in status["conditions"] if c["type"] == "Ready"]
    assert ready and ready[0]["status"] == "True"
    # Registering again (a restart) keeps the same node object and writes nothing: its
    # labels and taints are already right, and its status is the core's first report.
    later = time.time() + 60  # a status written now would differ from the first
    again = register_nodes(kube, identities, controller=controller, taint=taint, now=later)
    assert again.node_uids == reg.node_uids
    after = _node(kube, name)
    # (by field manager, not resourceVersion: the control plane's kube-controller-manager
    # may write the node meanwhile - the TTL annotation, the legacy beta labels)
    assert _our_writes(after) == _our_writes(node)
    assert after["spec"].get("taints", []) == taints


def test_never_touches_a_node_it_does_not_own(
    kube: KubeClient, api_client: client.ApiClient
) -> None:
    controller = unique("ctl")
    mine, theirs = unique("fake"), unique("real")
    create_fake_node(api_client, theirs, labels={"team": "gpu"})
    before = _node(kube, theirs)
    profiles = make_profiles(two_numa_profile(mine), two_numa_profile(theirs))
    identities = [(p, NodeIdentity(p.name, i)) for i, p in enumerate(profiles)]
    reg = register_nodes(kube, identities, controller=controller, taint=True, now=time.time())
    assert reg.foreign == (theirs,)
    assert set(reg.node_uids) == {mine}
    after = _node(kube, theirs)
    # Not its resourceVersion: the control plane's kube-controller-manager (the TTL and
    # node-lifecycle controllers) may write a kubelet-less node meanwhile. Nothing of
    # ours: no write under this client's field manager, the labels and taints untouched.
    assert _our_writes(after) == _our_writes(before) == set()
    assert not [k for k in after["metadata"].get("labels") or {} if "fakenrt" in k]
    assert not [t for t in after["spec"].get("taints") or [] if "fakenrt" in t["key"]]
    # A node owned by another controller is not "ours" either.
    other = unique("ctl")
    reg_other = register_nodes(kube, identities[:1], controller=other, taint=True, now=time.time())
    assert reg_other.foreign == (mine,)

    removed = remove_nodes(kube, controller=controller)
    assert removed == [mine]
    with pytest.raises(NotFound):
        _node(kube, mine)
    assert _node(kube, theirs)["metadata"]["uid"] == before["metadata"]["uid"]


def test_re_registering_keeps_taints_others_added(kube: KubeClient) -> None:
    controller, name = unique("ctl"), unique("fake")
    identities = [
        (p, NodeIdentity(p.name, i)) for i, p in enumerate(make_profiles(two_numa_profile(name)))
    ]
    register_nodes(kube, identities, controller=controller, taint=True, now=time.time())
    operator_taint = {"key": "example.com/maintenance", "value": "soon", "effect": "NoSchedule"}
    node = _node(kube, name)
    kube.patch(
        path("api", "v1", "nodes", name),
        {"spec": {"taints": [*node["spec"]["taints"], operator_taint]}},
    )
    # A restart keeps the operator's taint next to ours; --no-taint removes only ours.
    register_nodes(kube, identities, controller=controller, taint=True, now=time.time())
    assert _node(kube, name)["spec"]["taints"] == [operator_taint, owned_taint()]
    register_nodes(kube, identities, controller=controller, taint=False, now=time.time())
    assert _node(kube, name)["spec"]["taints"] == [operator_taint]
    remove_nodes(kube, controller=controller)


@pytest.mark.parametrize(
    ("current", "taint", "expected"),
    [
        pytest.param(
            [], True, [{"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}], id="add"
        ),
        pytest.param(
            [{"key": TAINT_KEY, "effect": "NoExecute"}],
            True,
            [{"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}],
            id="replace-ours",
        ),
        pytest.param(
            [{"key": "a", "effect": "NoSchedule"}, {"key": TAINT_KEY}],
            False,
            [{"key": "a", "effect": "NoSchedule"}],
            id="remove-ours-keep-others",
        ),
    ],
)
def test_merged_taints(
    current: list[dict[str, Any]], taint: bool, expected: list[dict[str, Any]]
) -> None:
    assert merged_taints(current, taint=taint) == expected


def _our_writes(node: dict[str, Any]) -> set[tuple[str, str, str]]:
    """The node's managedFields entries written by this suite's client (its field
    manager is its user agent's product, ``numa-testkit``)."""
    return {
        (m["manager"], m.get("operation", ""), m.get("time", ""))
        for m in node["metadata"].get("managedFields") or []
        if m["manager"].startswith("numa-testkit")
    }
