"""The control plane's kube-controller-manager: the controllers a real cluster runs and a
scheduler relies on work (root CA publisher, ServiceAccounts and their tokens, namespace
deletion, garbage collection, pod GC), and the node lifecycle controller leaves the
fakenrt controller's nodes alone - Ready, untainted, their pods not evicted - for longer
than its grace period, while it does mark a node whose leases stop.

The node test runs on a control plane of its own with the node monitor scaled down ten
times (``--node-monitor-grace-period=5s``, ``--node-monitor-period=1s``; the fakenrt
controller renews its leases every second instead of every 10 s), so that outliving the
grace period three times takes seconds, not minutes.
"""

from __future__ import annotations

import functools
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from kubernetes import client

from tests.controller.conftest import two_numa_profile
from tests.controlplane.cluster import ControlPlane, binaries_dir
from tests.controlplane.helpers import admin_client, install_crds
from tests.e2e.processes import Process, harness_env

pytestmark = pytest.mark.controlplane
T = TypeVar("T")
#: The scaled-down node monitor of the node test (kube-controller-manager flags).
GRACE_S = 5
NODE_MONITOR = (f"--node-monitor-grace-period={GRACE_S}s", "--node-monitor-period=1s")
#: Pod GC deletes terminated pods beyond this many (its default is 12,500).
POD_GC_THRESHOLD = 1


def _until(probe: Callable[[], T | None], *, timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def _gone(read: Callable[[], Any]) -> Callable[[], bool]:
    def probe() -> bool:
        try:
            read()
        except client.ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return False

    return probe


def _present(read: Callable[[], T]) -> Callable[[], T | None]:
    def probe() -> T | None:
        try:
            return read()
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    return probe


def test_a_new_namespace_gets_its_service_account_and_the_root_ca(
    control_plane: ControlPlane, api_client: client.ApiClient
) -> None:
    core = client.CoreV1Api(api_client)
    name = f"t-{uuid.uuid4().hex[:10]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    try:
        ca = _until(
            _present(lambda: core.read_namespaced_config_map("kube-root-ca.crt", name)),
            timeout=30,
            what="kube-root-ca.crt",
        )
        assert ca.data["ca.crt"].strip() == control_plane.ca_file.read_text().strip()
        _until(
            _present(lambda: core.read_namespaced_service_account("default", name)),
            timeout=30,
            what="the default ServiceAccount",
        )
    finally:
        core.delete_namespace(name)


def test_a_legacy_service_account_token_secret_is_filled_in(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_secret(
        namespace,
        client.V1Secret(
            metadata=client.V1ObjectMeta(
                name="token", annotations={"kubernetes.io/service-account.name": "default"}
            ),
            type="kubernetes.io/service-account-token",
        ),
    )
    secret = _until(
        lambda: (s := core.read_namespaced_secret("token", namespace)).data and s,
        timeout=30,
        what="the token controller",
    )
    assert set(secret.data) >= {"token", "ca.crt", "namespace"}


def test_deleting_a_namespace_deletes_what_it_holds_and_then_the_namespace(
    api_client: client.ApiClient,
) -> None:
    core = client.CoreV1Api(api_client)
    name = f"t-{uuid.uuid4().hex[:10]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    core.create_namespaced_config_map(
        name, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="data"), data={"a": "b"})
    )
    core.delete_namespace(name)
    _until(_gone(lambda: core.read_namespace(name)), timeout=60, what="the namespace finalized")


def test_the_garbage_collector_deletes_dependents_of_a_deleted_owner(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    owner = core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
    )
    reference = client.V1OwnerReference(
        api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid
    )
    core.create_namespaced_config_map(
        namespace,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="dependent", owner_references=[reference])
        ),
    )
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Background")
    _until(
        _gone(lambda: core.read_namespaced_config_map("dependent", namespace)),
        timeout=60,
        what="the dependent collected",
    )


# ---- the fake nodes under the node lifecycle controller -------------------------------


@pytest.fixture(scope="module")
def monitored() -> Iterator[ControlPlane]:
    """A control plane of its own whose node monitor is scaled down, and whose pod GC keeps
    one terminated pod."""
    args = (*NODE_MONITOR, f"--terminated-pod-gc-threshold={POD_GC_THRESHOLD}")
    with ControlPlane(bin_dir=binaries_dir(), controller_manager_args=args) as cp:
        install_crds(admin_client(cp))
        yield cp


def _controller(cp: ControlPlane, tmp_path: Path, names: list[str]) -> Process:
    profile = tmp_path / "profile.yaml"
    nodes = [two_numa_profile(n) for n in names]
    profile.write_text(yaml.safe_dump({"nodes": nodes}))
    return Process(
        "controller",
        [
            sys.executable, "-c", "from fakenrt.cli import main; main()", "controller",
            "--kubeconfig", str(cp.kubeconfig),
            "--profile", str(profile),
            "--state-dir", str(tmp_path / "s"),
            "--controller-name", "kcm-test",
            "--lease-renew-interval", "1",
        ],
        tmp_path / "controller.log",
    )  # fmt: skip


def _ready(node: Any) -> str | None:
    for condition in node.status.conditions or []:
        if condition.type == "Ready":
            return str(condition.status)
    return None


def _foreign_taints(node: Any) -> list[str]:
    """Taints on the node other than the fakenrt controller's own."""
    return [
        f"{t.key}:{t.effect}" for t in node.spec.taints or [] if t.key != "fakenrt.io/fake-node"
    ]


def test_the_node_lifecycle_controller_leaves_the_fake_nodes_alone_and_watches_them(
    monitored: ControlPlane, tmp_path: Path
) -> None:
    """Three grace periods with the controller's leases: every node Ready, no taint, the
    bound pods neither evicted nor deleted. Then the controller is SIGKILLed: within a
    grace period (and the monitor's period), the node lifecycle controller marks its
    nodes not Ready and taints them unreachable - it was watching all along."""
    api = admin_client(monitored)
    core = client.CoreV1Api(api)
    names = [f"kcm-{uuid.uuid4().hex[:6]}" for _ in range(2)]
    controller = _controller(monitored, tmp_path, names)
    controller.start(harness_env())
    try:

        def all_ready() -> bool:
            nodes = [_present(functools.partial(core.read_node, n))() for n in names]
            return all(n is not None and _ready(n) == "True" for n in nodes)

        _until(all_ready, timeout=60, what="the fake nodes Ready")
        for i, node in enumerate(names):
            core.create_namespaced_pod(
                "default",
                client.V1Pod(
                    metadata=client.V1ObjectMeta(name=f"kcm-pod-{i}-{node}"),
                    spec=client.V1PodSpec(
                        node_name=node,
                        containers=[client.V1Container(name="c", image="registry.k8s.io/pause")],
                        tolerations=[
                            client.V1Toleration(key="fakenrt.io/fake-node", operator="Exists")
                        ],
                    ),
                ),
            )
        pods = {f"kcm-pod-{i}-{n}" for i, n in enumerate(names)}
        deadline = time.monotonic() + 3 * GRACE_S + 2
        seen: list[str] = []
        while time.monotonic() < deadline:
            assert not controller.exited(), controller.tail()
            for name in names:
                node = core.read_node(name)
                if _ready(node) != "True" or _foreign_taints(node):
                    seen.append(f"{name}: Ready={_ready(node)} taints={_foreign_taints(node)}")
            listed = core.list_namespaced_pod("default").items
            alive = {p.metadata.name for p in listed if not p.metadata.deletion_timestamp}
            if not pods <= alive:
                seen.append(f"pods gone or deleting: {sorted(pods - alive)}")
            time.sleep(0.5)
        assert seen == [], (
            "\n".join(seen[:10]) + "\n" + monitored.log_tail("kube-controller-manager")
        )
        events = core.list_namespaced_event("default").items
        assert not [e for e in events if e.reason in ("TaintManagerEviction", "NodeNotReady")]

        controller.kill()  # the leases stop

        def marked() -> bool:
            nodes = [core.read_node(n) for n in names]
            return all(
                _ready(n) == "Unknown"
                and "node.kubernetes.io/unreachable:NoSchedule" in _foreign_taints(n)
                for n in nodes
            )

        _until(marked, timeout=GRACE_S + 20, what="the nodes marked unreachable")
    finally:
        controller.kill()
        for pod in core.list_namespaced_pod("default").items:
            core.delete_namespaced_pod(pod.metadata.name, "default", grace_period_seconds=0)
        for name in names:
            _gone(functools.partial(core.delete_node, name))()


def test_pod_gc_deletes_terminated_pods_beyond_its_threshold(monitored: ControlPlane) -> None:
    core = client.CoreV1Api(admin_client(monitored))
    names = [f"done-{uuid.uuid4().hex[:6]}-{i}" for i in range(3)]
    for name in names:
        core.create_namespaced_pod(
            "default",
            client.V1Pod(
                metadata=client.V1ObjectMeta(name=name),
                spec=client.V1PodSpec(
                    containers=[client.V1Container(name="c", image="registry.k8s.io/pause")]
                ),
            ),
        )
        core.patch_namespaced_pod_status(name, "default", {"status": {"phase": "Succeeded"}})

    def collected() -> bool:
        left = [p for p in core.list_namespaced_pod("default").items if p.metadata.name in names]
        return len(left) <= POD_GC_THRESHOLD

    _until(collected, timeout=60, what="pod GC (it runs every 20 s)")
