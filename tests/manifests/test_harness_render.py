"""manifests/harness: the exporters are the production exporter, one per fake node of the
harness profile, and the committed exporters.yaml is what the generator makes of it."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from fakenrt.cli import main
from fakenrt.harness import HarnessError, exporter_deployments
from fakenrt.profiles import load_profiles
from tests.manifests.tools import MANIFESTS, REPO

HARNESS = MANIFESTS / "harness"
DAEMONSET = MANIFESTS / "exporter" / "daemonset.yaml"
STATE = "/var/lib/fakenrt/harness"


def _daemonset() -> dict[str, Any]:
    doc = yaml.safe_load(DAEMONSET.read_text())
    assert isinstance(doc, dict)
    return doc


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _generate(*args: str) -> Any:
    return CliRunner().invoke(main, ["harness", "exporters", *args], catch_exceptions=False)


def test_committed_exporters_match_the_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    result = _generate("--profile", "manifests/harness/profile.yaml")
    assert result.exit_code == 0, result.output
    assert result.output == (HARNESS / "exporters.yaml").read_text(), (
        "manifests/harness/exporters.yaml is stale: regenerate it with "
        "`fakenrt harness exporters --profile manifests/harness/profile.yaml`"
    )


def test_one_exporter_per_profile_node() -> None:
    nodes = [p.name for p in load_profiles(HARNESS / "profile.yaml")]
    deployments = _docs(HARNESS / "exporters.yaml")
    envs = [
        {e["name"]: e for e in d["spec"]["template"]["spec"]["containers"][0]["env"]}
        for d in deployments
    ]
    assert [e["NODE_NAME"]["value"] for e in envs] == nodes
    assert len({d["metadata"]["name"] for d in deployments}) == len(nodes)


def test_exporter_pod_is_the_production_pod_but_for_the_fake_node() -> None:
    production = _daemonset()["spec"]["template"]
    (deployment,) = exporter_deployments(
        _daemonset(), ["n1"], namespace="ns", state_dir=STATE, service_account="sa"
    )
    harness = deployment["spec"]["template"]
    pod, prod_pod = harness["spec"], production["spec"]
    (container,), (prod_container,) = pod["containers"], prod_pod["containers"]
    # Unchanged: everything of the container but NODE_NAME's source.
    env = {e["name"]: e for e in container["env"]}
    prod_env = {e["name"]: e for e in prod_container["env"]}
    assert env.pop("NODE_NAME") == {"name": "NODE_NAME", "value": "n1"}
    assert prod_env.pop("NODE_NAME")["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert env == prod_env
    assert {k: v for k, v in container.items() if k != "env"} == {
        k: v for k, v in prod_container.items() if k != "env"
    }
    assert pod["securityContext"] == prod_pod["securityContext"]
    assert harness["metadata"]["annotations"] == production["metadata"]["annotations"]
    # Changed: identity, placement and where the two host paths point.
    assert pod["serviceAccountName"] == "sa"
    assert "tolerations" not in pod
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "fakenrt.io/fake-node", "operator": "DoesNotExist"}]}
    ]
    (colocated,) = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert colocated["labelSelector"]["matchLabels"] == {
        "app.kubernetes.io/name": "fakenrt-controller"
    }
    assert {v["name"]: v["hostPath"] for v in pod["volumes"]} == {
        "pod-resources": {"path": f"{STATE}/n1", "type": "DirectoryOrCreate"},
        "sysfs-numa": {"path": f"{STATE}/n1/sys/devices/system/node", "type": "DirectoryOrCreate"},
        "sysfs-devices": {"path": f"{STATE}/n1/sys/devices", "type": "DirectoryOrCreate"},
        "sysfs-pci": {"path": f"{STATE}/n1/sys/bus/pci/devices", "type": "DirectoryOrCreate"},
    }
    assert deployment["metadata"]["namespace"] == "ns"
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= harness["metadata"]["labels"].items()
    assert selector["fakenrt.io/node"] == "n1"


def test_controller_serves_where_the_exporters_read() -> None:
    """The controller's --state-dir is the hostPath the exporters' paths are under, and
    the exporters' pod affinity selects the controller's pods."""
    controller = _docs(HARNESS / "controller.yaml")[0]
    pod = controller["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert f"--state-dir={STATE}" in args
    (state,) = [v for v in pod["volumes"] if v["name"] == "state"]
    assert state["hostPath"]["path"] == STATE
    mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert mounts["state"] == STATE
    labels = controller["spec"]["template"]["metadata"]["labels"]
    for deployment in _docs(HARNESS / "exporters.yaml"):
        spec = deployment["spec"]["template"]["spec"]
        node = deployment["metadata"]["labels"]["fakenrt.io/node"]
        paths = {v["hostPath"]["path"] for v in spec["volumes"]}
        sys = f"{STATE}/{node}/sys"
        assert paths == {
            f"{STATE}/{node}",
            f"{sys}/devices/system/node",
            f"{sys}/devices",
            f"{sys}/bus/pci/devices",
        }
        term = spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term[0]["labelSelector"]["matchLabels"].items() <= labels.items()


def _without_node_name(ds: dict[str, Any]) -> dict[str, Any]:
    ds["spec"]["template"]["spec"]["containers"][0]["env"] = []
    return ds


def _with_host_path(ds: dict[str, Any]) -> dict[str, Any]:
    ds["spec"]["template"]["spec"]["volumes"].append({"name": "etc", "hostPath": {"path": "/etc"}})
    return ds


def _as_deployment(ds: dict[str, Any]) -> dict[str, Any]:
    ds["kind"] = "Deployment"
    return ds


@pytest.mark.parametrize(
    ("change", "nodes", "state_dir", "message"),
    [
        pytest.param(_as_deployment, ["n"], STATE, "expected a DaemonSet", id="not-a-daemonset"),
        pytest.param(_without_node_name, ["n"], STATE, "NODE_NAME", id="no-node-name-env"),
        pytest.param(_with_host_path, ["n"], STATE, "'/etc'", id="unknown-host-path"),
        pytest.param(None, ["a" * 64], STATE, "not usable as a label value", id="long-node-name"),
        pytest.param(None, ["n", "n"], STATE, "repeat", id="duplicate-node"),
        pytest.param(None, ["n"], "relative/dir", "absolute", id="relative-state-dir"),
    ],
)
def test_generator_refuses_what_it_cannot_map(
    change: Any, nodes: list[str], state_dir: str, message: str
) -> None:
    ds = copy.deepcopy(_daemonset())
    if change is not None:
        ds = change(ds)
    with pytest.raises(HarnessError, match=message):
        exporter_deployments(ds, nodes, namespace="ns", state_dir=state_dir, service_account="sa")


def test_cli_reports_a_bad_daemonset_file(tmp_path: Path) -> None:
    bad = tmp_path / "ds.yaml"
    bad.write_text("kind: ConfigMap\nmetadata: {name: x}\n")
    result = _generate(
        "--profile", str(HARNESS / "profile.yaml"), "--daemonset", str(bad)
    )  # fmt: skip
    assert result.exit_code == 1
    assert f"{bad}: expected one DaemonSet, found 0" in result.output


def test_scheduler_reads_its_in_cluster_kubeconfig_and_default_args(tmp_path: Path) -> None:
    """The scheduler's kubeconfig names the pod's own projected token and CA, and its
    shipped plugin arguments are the defaults. (The files it names must exist to be
    loaded: here they are in a directory standing in for the pod's.)"""
    from exporter.kubesettings import from_kubeconfig
    from fakenrt.scheduler.args import PluginArgs, parse_args

    secrets = "/var/run/secrets/kubernetes.io/serviceaccount"
    text = (HARNESS / "scheduler-kubeconfig.yaml").read_text()
    assert text.count(secrets) == 2
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=ca",
         "-keyout", str(tmp_path / "ca.key"), "-days", "1", "-out", str(tmp_path / "ca.crt")],
        check=True, capture_output=True,
    )  # fmt: skip
    (tmp_path / "token").write_text("t")
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text(text.replace(secrets, str(tmp_path)))
    config = from_kubeconfig(kubeconfig)
    assert config.server == "https://kubernetes.default.svc"
    assert (config.ca_file, config.token_file) == (tmp_path / "ca.crt", tmp_path / "token")
    docs = list(yaml.safe_load_all((HARNESS / "scheduler-args.yaml").read_text()))
    assert [d for d in docs if d is not None] == []
    assert parse_args(None, source="scheduler-args.yaml") == PluginArgs()
    scheduler = _docs(HARNESS / "scheduler.yaml")[0]
    args = scheduler["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--kubeconfig=/etc/fakenrt/scheduler/kubeconfig.yaml" in args
    assert "--args=/etc/fakenrt/scheduler/args.yaml" in args
    kustomization = yaml.safe_load((HARNESS / "kustomization.yaml").read_text())
    (generator,) = [
        g for g in kustomization["configMapGenerator"] if g["name"] == "fakenrt-scheduler"
    ]
    assert sorted(generator["files"]) == [
        "args.yaml=scheduler-args.yaml",
        "kubeconfig.yaml=scheduler-kubeconfig.yaml",
    ]
