"""manifests/nrt-publisher on the real API server: the ServiceAccount holds exactly the
NRT verbs the publisher uses, and with a token of that account the publisher creates and
updates its node's object (a conflict included); the DaemonSet mounts what the command
reads and passes only flags the command has."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from exporter.kubeclient import KubeClient
from exporter.kubesettings import ClusterConfig
from fakenrt.controller.writers import nrt_path
from fakenrt.kubelet.node import NodeState
from fakenrt.nrt.loaded import node_allocations
from fakenrt.nrtpub.daemon import Publisher, PublisherOptions
from tests.controller.conftest import ManualClock, make_profiles, two_numa_profile, unique
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.helpers import ensure_service_account
from tests.manifests.conftest import IDENTITY_KINDS
from tests.manifests.test_rbac import _rules
from tests.manifests.tools import MANIFESTS, Kubectl
from tests.nrtpub.realnode_files import served_node
from tests.nrtpub.test_differential import expected_view, guaranteed

NS = "numa-nrt-publisher"
ACCOUNT = "fakenrt-nrt-publisher"
NRT = "topology.node.k8s.io"
DIRECTORY = MANIFESTS / "nrt-publisher"


def _objects(kind: str) -> list[dict[str, Any]]:
    return [
        o
        for o in yaml.safe_load_all(
            "\n---\n".join(p.read_text() for p in sorted(DIRECTORY.glob("*.yaml")))
        )
        if o and o.get("kind") == kind
    ]


@pytest.fixture(scope="module")
def identities(kubectl: Kubectl, manifest_namespaces: list[str]) -> None:
    objects = [o for o in kubectl.render(DIRECTORY) if o["kind"] in IDENTITY_KINDS]
    kubectl.run(
        "apply", "--server-side", "--force-conflicts", "-f", "-",
        stdin=yaml.safe_dump_all(objects),
    )  # fmt: skip


@pytest.mark.controlplane
@pytest.mark.usefixtures("identities")
def test_the_account_holds_exactly_the_nrt_verbs(
    control_plane: ControlPlane, api_client: client.ApiClient
) -> None:
    ensure_service_account(api_client, NS, "unbound")
    base, base_urls = _rules(control_plane, f"system:serviceaccount:{NS}:unbound", NS)
    for namespace in (NS, "default"):
        got, urls = _rules(control_plane, f"system:serviceaccount:{NS}:{ACCOUNT}", namespace)
        assert got - base == {
            (NRT, "noderesourcetopologies", v) for v in ("get", "create", "update")
        }
        assert urls == base_urls


@pytest.fixture
def account_kube(control_plane: ControlPlane, api_client: client.ApiClient) -> Iterator[KubeClient]:
    token = (
        client.CoreV1Api(api_client)
        .create_namespaced_service_account_token(
            ACCOUNT,
            NS,
            client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[])),
        )
        .status.token
    )
    config = ClusterConfig(server=control_plane.server, ca_file=control_plane.ca_file, token=token)
    yield KubeClient(config, connect_timeout_s=30.0, read_timeout_s=30.0)


@pytest.mark.controlplane
@pytest.mark.usefixtures("identities", "nrt_crd")
def test_the_publisher_does_its_job_with_the_accounts_token(
    account_kube: KubeClient, api_client: client.ApiClient
) -> None:
    raw = two_numa_profile(unique("real"))
    raw["kubelet"]["reservedSystemCPUs"] = "0"
    (profile,) = make_profiles(raw)
    state = NodeState.from_profile(profile)
    clock = ManualClock()
    with served_node(profile) as served:
        options = PublisherOptions(
            node=profile.name,
            podresources_socket=served.socket,
            sysfs_root=served.sysfs_root,
            kubelet_config=served.kubelet_config,
        )
        publisher = Publisher(options, account_kube, clock=clock)
        try:
            publisher.step()  # create
            # Someone else writes the object: the next update conflicts, re-reads (get)
            # and wins.
            custom = client.CustomObjectsApi(api_client)
            stored = custom.get_cluster_custom_object(
                NRT, "v1alpha2", "noderesourcetopologies", profile.name
            )
            stored["attributes"] = []
            custom.replace_cluster_custom_object(
                NRT, "v1alpha2", "noderesourcetopologies", profile.name, stored
            )
            assert state.admit(
                dataclasses.replace(guaranteed("a", 2, "1Gi"), node_name=profile.name)
            ).admit
            served.serve(node_allocations(state))
            clock.advance(1.0)
            publisher.step()  # update -> conflict -> get -> update
            assert publisher.health.readiness() == (True, "ok")
        finally:
            publisher.close()
    final = account_kube.get(nrt_path(profile.name))
    assert final["zones"] == expected_view(state)["zones"]
    assert final["attributes"] == expected_view(state)["attributes"]


def test_the_daemonset_reads_what_the_command_needs() -> None:
    from fakenrt.commands.nrt import publish

    (daemonset,) = _objects("DaemonSet")
    (exporter,) = [
        o
        for o in yaml.safe_load_all((MANIFESTS / "exporter/daemonset.yaml").read_text())
        if o["kind"] == "DaemonSet"
    ]
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["tolerations"] == exporter["spec"]["template"]["spec"]["tolerations"]
    assert pod["serviceAccountName"] == ACCOUNT
    (container,) = pod["containers"]
    assert container["image"] == "numa-testkit/numa-testkit:local"
    assert container["command"] == ["fakenrt"]
    assert container["args"][:2] == ["nrt", "publish"]
    flags = {opt for p in publish.params for opt in getattr(p, "opts", [])}
    args = dict(a.split("=", 1) for a in container["args"][2:])
    assert set(args) <= flags
    (node_name,) = [e for e in container["env"] if e["name"] == "NODE_NAME"]
    assert node_name["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    volumes = {v["name"]: v["hostPath"] for v in pod["volumes"]}
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert all(m["readOnly"] for m in mounts.values())
    host = {volumes[name]["path"]: m["mountPath"] for name, m in mounts.items()}
    assert host == {
        "/var/lib/kubelet/pod-resources": "/var/lib/kubelet/pod-resources",
        "/sys/devices/system/node": "/host/sys/devices/system/node",
        "/var/lib/kubelet/config.yaml": "/host/kubelet/config.yaml",
    }
    assert Path(args["--podresources-socket"]).parent == Path("/var/lib/kubelet/pod-resources")
    assert args["--sysfs-root"] + "/devices/system/node" == host["/sys/devices/system/node"]
    assert args["--kubelet-config"] == host["/var/lib/kubelet/config.yaml"]
    port = args["--health-bind-address"].rsplit(":", 1)[1]
    assert container["ports"][0]["containerPort"] == int(port)
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
