"""Reading pods from the watch, the recovery order, and the status bodies."""

from __future__ import annotations

import random

import pytest

from fakenrt.controller.nodeobjects import NodeIdentity
from fakenrt.controller.pods import SEQUENCE_ANNOTATION, observe_pod, recovery_order
from fakenrt.controller.podstatus import rejected_status, running_status
from tests.controller.podmanifests import pod


def _with(seq: str | None, created: str, name: str) -> dict[str, object]:
    manifest = pod(name, "n", created=created)
    if seq is not None:
        manifest["metadata"]["annotations"][SEQUENCE_ANNOTATION] = seq
    return manifest


def test_recovery_order_is_sequence_then_creation_then_a_seeded_order_in_a_second() -> None:
    manifests = [
        _with(None, "2027-01-01T00:00:05Z", "late-new"),
        _with("3", "2027-01-01T00:00:00Z", "third"),
        _with(None, "2027-01-01T00:00:01Z", "b-new"),
        _with("1", "2027-01-01T00:00:09Z", "first"),
        _with(None, "2027-01-01T00:00:01Z", "a-new"),
        _with("junk", "2027-01-01T00:00:02Z", "bad-seq"),
    ]
    pods = [observe_pod(m) for m in manifests]
    for seed in range(20):
        ordered = [p.name for p in sorted(pods, key=recovery_order(seed))]
        assert ordered[:2] == ["first", "third"]
        assert sorted(ordered[2:4]) == ["a-new", "b-new"]
        assert ordered[4:] == ["bad-seq", "late-new"]
        shuffled = random.Random(seed).sample(pods, len(pods))
        assert ordered == [p.name for p in sorted(shuffled, key=recovery_order(seed))]


def test_pods_of_one_second_come_in_every_order_over_seeds_not_by_name() -> None:
    # The kubelet leaves ties of one creation second in an arbitrary order: a burst named
    # in bind order must not always be admitted in bind order.
    burst = [observe_pod(_with(None, "2027-01-01T00:00:01Z", f"b{i}")) for i in range(1, 5)]
    orders = {tuple(p.name for p in sorted(burst, key=recovery_order(seed))) for seed in range(64)}
    assert ("b1", "b2", "b3", "b4") in orders
    assert len(orders) > 12


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        pytest.param({"cpu": "lots"}, "cpu", id="bad-quantity"),
        pytest.param({"cpu": "-1"}, "negative", id="negative"),
    ],
)
def test_unreadable_resources_keep_the_error_naming_pod_and_field(
    patch: dict[str, str], field: str
) -> None:
    manifest = pod("p", "n")
    manifest["spec"]["containers"][0]["resources"]["limits"].update(patch)
    observed = observe_pod(manifest)
    assert observed.spec is None
    assert observed.error is not None and "ns/p" in observed.error and field in observed.error


def test_running_status_marks_sidecars_running_and_init_containers_completed() -> None:
    manifest = pod("p", "n")
    manifest["spec"]["initContainers"] = [
        {"name": "setup", "image": "busybox"},
        {"name": "proxy", "image": "envoy", "restartPolicy": "Always"},
    ]
    ident = NodeIdentity("n", 300)
    status = running_status(
        observe_pod(manifest),
        admitted_at=0,
        at=1,
        host_ip=ident.internal_ip,
        pod_ip=ident.pod_ip(7),
    )
    assert status["podIP"] == "10.2.44.7" and status["hostIP"] == "100.64.1.45"
    inits = {s["name"]: s for s in status["initContainerStatuses"]}
    assert inits["setup"]["state"]["terminated"]["reason"] == "Completed"
    assert inits["proxy"]["ready"] and "running" in inits["proxy"]["state"]
    assert status["containerStatuses"][0]["containerID"].startswith("fakenrt://")


def test_rejected_status_is_exactly_the_kubelets() -> None:
    assert rejected_status(reason="OutOfcpu", message="Node didn't have enough resource: cpu") == {
        "phase": "Failed",
        "reason": "OutOfcpu",
        "message": "Pod was rejected: Node didn't have enough resource: cpu",
    }


@pytest.mark.parametrize(
    ("ip", "host"),
    [
        pytest.param("10.2.44.7", 7, id="own-cidr"),
        pytest.param("10.2.44.254", 254, id="last"),
        pytest.param("10.2.4.7", None, id="other-node-same-prefix-digits"),
        pytest.param("10.2.44", None, id="short"),
        pytest.param("", None, id="no-ip"),
        pytest.param("10.2.44.x", None, id="not-a-number"),
    ],
)
def test_pod_host_reads_only_this_nodes_cidr(ip: str, host: int | None) -> None:
    ident = NodeIdentity("n", 300)  # pod CIDR 10.2.44.0/24
    assert ident.pod_host(ip) == host
    if host is not None:
        assert ident.pod_ip(host) == ip
