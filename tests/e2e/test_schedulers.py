"""The scheduler options of the e2e suite: the ad-hoc scheduler and picking adapters."""

from __future__ import annotations

import fcntl
from dataclasses import replace
from pathlib import Path

import pytest

from schedulers.adapter import Claim, Placeholders, argv
from schedulers.kai import RECONSTRUCTION as KAI
from schedulers.koordinator import NODE_LABEL, NUMA_POLICY_LABEL
from schedulers.reference import RECONSTRUCTION, STALE_NRT
from schedulers.volcano import VOLCANO
from tests.e2e.cluster import resource_claim
from tests.e2e.deployment import Topology
from tests.e2e.schedulers import SchedulerRun, exclusive_lock, from_options, pod_scheduling
from tests.e2e.topologies import two_zone_node


def test_the_ad_hoc_scheduler_keeps_its_name_and_fills_placeholders() -> None:
    scheduler = from_options(
        name="topo",
        command="kube-scheduler --kubeconfig {kubeconfig} --name={scheduler_name} "
        "--sel '{node_selector}' --dir {workdir}/x",
        reason="cannot align",
    )
    assert scheduler is not None
    values = Placeholders.example()
    assert argv(scheduler.components[0].command, values, where="t") == [
        "kube-scheduler", "--kubeconfig", "/kubeconfig", "--name=scheduler",
        "--sel", "fakenrt.io/controller=e2e", "--dir", "/workdir/x",
    ]  # fmt: skip
    assert scheduler.name_for("e2e-1") == "topo" and scheduler.id == "custom-topo"
    assert scheduler.unschedulable.reason == "cannot align"
    assert scheduler.claims == {Claim.ALIGNED, Claim.LAG_SAFE, Claim.REPORTS_UNSCHEDULABLE}
    assert not scheduler.trusts_stale_nrt and scheduler.build is None


def test_claims_of_the_ad_hoc_scheduler() -> None:
    none = from_options(name="t", command="s", reason="x", claims="none")
    assert none is not None and none.claims == frozenset()
    some = from_options(name="t", command="s", reason="x", claims="exact-prediction, aligned")
    assert some is not None and some.claims == {Claim.EXACT_PREDICTION, Claim.ALIGNED}


def test_no_options_means_no_ad_hoc_scheduler() -> None:
    assert from_options(name=None, command=None, reason="x") is None


@pytest.mark.parametrize(
    ("name", "command", "reason", "claims", "complaint"),
    [
        pytest.param("topo", None, "x", None, "go together", id="name-only"),
        pytest.param(None, "kube-scheduler", "x", None, "go together", id="command-only"),
        pytest.param("", "kube-scheduler", "x", None, "go together", id="empty-name"),
        pytest.param("t", "s --k {kubecfg}", "x", None, "unknown placeholder", id="placeholder"),
        pytest.param("topo", "s", "(", None, "--scheduler-reason", id="bad-regex"),
        pytest.param("topo", "s", "x", "fast", "--scheduler-claims", id="bad-claim"),
    ],
)
def test_bad_options_are_usage_errors(
    name: str | None, command: str | None, reason: str, claims: str | None, complaint: str
) -> None:
    with pytest.raises(pytest.UsageError, match=complaint):
        from_options(name=name, command=command, reason=reason, claims=claims)


def test_reference_modes_differ_only_in_trusting_nrt() -> None:
    values = Placeholders.example()
    (base,) = (argv(c.command, values, where="t") for c in RECONSTRUCTION.components)
    (stale,) = (argv(c.command, values, where="t") for c in STALE_NRT.components)
    assert stale[: len(base)] == base
    assert stale[len(base) :] == ["--args", "/workdir/stale-nrt.yaml"]
    assert STALE_NRT.files == {"stale-nrt.yaml": "reconstructAvailable: false\n"}
    assert STALE_NRT.trusts_stale_nrt and not RECONSTRUCTION.trusts_stale_nrt
    assert RECONSTRUCTION.scheduler_name == STALE_NRT.scheduler_name
    assert RECONSTRUCTION.name_for("e2e-1") == "numa-reference-e2e-1"


def test_kais_claims_carry_the_queue_label_of_its_pods() -> None:
    """KAI schedules a pod with a standalone GPU claim only when the claim carries the
    pod's queue label: the claims a scenario makes for KAI's pods carry it; other
    schedulers' claims carry no label."""
    values = Placeholders.example()
    kai = pod_scheduling(KAI, "e2e-1", values)
    queue = kai.labels["kai.scheduler/queue"]
    assert kai.claim_labels == {"kai.scheduler/queue": queue}
    claim = resource_claim("c", namespace="ns", gpus=1, labels=kai.claim_labels)
    assert claim["metadata"]["labels"] == {"kai.scheduler/queue": queue}
    plain = pod_scheduling(RECONSTRUCTION, "e2e-1", values)
    assert plain.claim_labels == {}
    claim = resource_claim("c", namespace="ns", gpus=1, labels=plain.claim_labels)
    assert "labels" not in claim["metadata"]


def test_a_placeholder_path_with_spaces_stays_one_argument() -> None:
    values = Placeholders.example()
    spaced = replace(values, kubeconfig=Path("/a b/kc"))
    (words,) = (argv(c.command, spaced, where="t") for c in RECONSTRUCTION.components)
    assert words[words.index("--kubeconfig") + 1] == "/a b/kc"


def test_the_topology_policy_placeholder_is_the_first_nodes_policy() -> None:
    nodes = (two_zone_node(policy="restricted"), two_zone_node(policy="single-numa-node"))
    assert Topology(nodes=nodes).topology_policy == "restricted"
    plain = {
        "name": "n",
        "shape": {"numaNodes": 1, "coresPerNumaNode": 1, "memoryPerNumaNode": "1Gi"},
    }
    assert Topology(nodes=(plain,)).topology_policy == "none"  # the kubelet's default


def test_a_scheduler_reading_volcanos_objects_gets_nodes_that_publish_them() -> None:
    node = two_zone_node(policy="single-numa-node", nrt={"delay": "2s"})
    (adapted,) = Topology(nodes=(node,)).for_scheduler(VOLCANO).nodes
    assert adapted["nrt"] == {"volcano": True, "delay": "2s"}
    (profile,) = Topology(nodes=(adapted,)).profiles()
    assert profile.nrt_volcano is True and profile.nrt_delay == 2.0


def test_koordinators_node_label_mode_labels_each_node_with_its_own_policy() -> None:
    nodes = (
        two_zone_node(policy="single-numa-node"),
        two_zone_node(policy="restricted"),
        {**two_zone_node(policy="none"), "labels": {"example.com/keep": "x"}},
    )
    adapted = Topology(nodes=nodes).for_scheduler(NODE_LABEL).nodes
    assert [n.get("labels") for n in adapted] == [
        {NUMA_POLICY_LABEL: "SingleNUMANode"},
        {NUMA_POLICY_LABEL: "Restricted"},
        {"example.com/keep": "x"},  # None has no label; a node's own labels stay
    ]
    assert all(n["nrt"] == {"koordlet": True} for n in adapted)


def test_a_topology_gets_what_the_scheduler_expects_of_the_nodes() -> None:
    nodes = ({"name": "a", "nrt": {"delay": "2s"}}, {"name": "b"})
    topology = Topology(nodes=nodes, controller_args=("--seed", "7"))
    assert topology.for_scheduler(RECONSTRUCTION) == topology
    wants = replace(
        RECONSTRUCTION,
        nrt={"fingerprintTerminatedPods": True, "delay": "0s"},
        controller_args=("--x",),
    )
    got = topology.for_scheduler(wants)
    assert got.nodes == (
        {"name": "a", "nrt": {"fingerprintTerminatedPods": True, "delay": "2s"}},
        {"name": "b", "nrt": {"fingerprintTerminatedPods": True, "delay": "0s"}},
    )
    assert got.controller_args == ("--seed", "7", "--x")


def _held(path: Path) -> bool:
    with path.open("a") as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(probe, fcntl.LOCK_UN)
        return False


def test_an_exclusive_scheduler_runs_one_deployment_per_cluster(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    first = SchedulerRun(VOLCANO, kubeconfig, "e2e-1", tmp_path / "w1")
    lock = exclusive_lock(VOLCANO, kubeconfig)
    assert not _held(lock)
    first.acquire()
    assert _held(lock)  # a second deployment's acquire waits
    assert not _held(exclusive_lock(VOLCANO, tmp_path / "other-cluster"))
    first.release()
    assert not _held(lock)
    shared = SchedulerRun(RECONSTRUCTION, kubeconfig, "e2e-2", tmp_path / "w2")
    shared.acquire()  # not exclusive: nothing is held
    assert not _held(exclusive_lock(RECONSTRUCTION, kubeconfig))
