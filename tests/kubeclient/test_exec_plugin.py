"""Kubeconfig exec credential plugins (EKS/GKE/AKS style): parsed from the kubeconfig,
run non-interactively, token renewed before it expires and after a 401 - against the
real API server with a small plugin script."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from exporter.execcredential import (
    ExecCredential,
    ExecCredentialError,
    ExecPlugin,
    parse_exec_credential,
)
from exporter.kubeclient import KubeClient, path
from exporter.kubeconfig import from_kubeconfig
from exporter.kubeerrors import Transient, Unauthorized
from tests.controlplane.cluster import ControlPlane


def _credential(token: str, expiry: str | None = None) -> str:
    status: dict[str, str] = {"token": token}
    if expiry:
        status["expirationTimestamp"] = expiry
    return json.dumps(
        {
            "apiVersion": "client.authentication.k8s.io/v1",
            "kind": "ExecCredential",
            "status": status,
        }
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(_credential("t"), ExecCredential("t"), id="no-expiry"),
        pytest.param(
            _credential("t", "2030-01-01T00:00:00Z"), ExecCredential("t", 1893456000.0), id="expiry"
        ),
    ],
)
def test_parse_exec_credential(text: str, expected: ExecCredential) -> None:
    assert parse_exec_credential(text, "p") == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("nope", "not JSON", id="not-json"),
        pytest.param("{}", "no status", id="no-status"),
        pytest.param(
            json.dumps({"status": {"clientCertificateData": "x"}}),
            "a client certificate",
            id="cert",
        ),
        pytest.param(_credential("t", "tomorrow"), "not RFC 3339", id="bad-expiry"),
    ],
)
def test_unusable_exec_credentials_are_named(text: str, message: str) -> None:
    with pytest.raises(ExecCredentialError, match=message):
        parse_exec_credential(text, "p")


def _plugin_kubeconfig(tmp_path: Path, cp: ControlPlane, script: str) -> Path:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(script)
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    config = tmp_path / "kubeconfig"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                "clusters": [
                    {
                        "name": "k",
                        "cluster": {"server": cp.server, "certificate-authority": str(cp.ca_file)},
                    }
                ],
                "users": [
                    {
                        "name": "u",
                        "user": {
                            "exec": {
                                "apiVersion": "client.authentication.k8s.io/v1",
                                "command": sys.executable,
                                "args": [str(plugin)],
                                "env": [{"name": "PLUGIN_DIR", "value": str(tmp_path)}],
                            }
                        },
                    }
                ],
            }
        )
    )
    return config


# Prints the admin token (or a wrong one once, when told to) with the expiry the test
# wrote, and counts its runs; checks it is run non-interactively as kubectl does.
PLUGIN = """
import json, os, pathlib
d = pathlib.Path(os.environ["PLUGIN_DIR"])
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
assert info["spec"]["interactive"] is False
runs = d / "runs"
runs.write_text(str(int(runs.read_text()) + 1 if runs.exists() else 1))
token = (d / "token").read_text()
bad = d / "bad-once"
if bad.exists():
    bad.unlink()
    token = "wrong"
status = {"token": token}
expiry = (d / "expiry").read_text() if (d / "expiry").exists() else ""
if expiry:
    status["expirationTimestamp"] = expiry
print(json.dumps({"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}))
"""


def test_exec_plugin_token_is_used_renewed_before_expiry_and_after_a_401(
    tmp_path: Path, control_plane: ControlPlane
) -> None:
    (tmp_path / "token").write_text(control_plane.admin_token)
    (tmp_path / "expiry").write_text("2030-01-01T00:00:00Z")
    config = from_kubeconfig(_plugin_kubeconfig(tmp_path, control_plane, PLUGIN))
    assert config.exec_plugin is not None and config.exec_plugin.command == sys.executable
    now = [1_000.0]
    wall = [1893456000.0 - 3600]  # one hour before the token expires
    kube = KubeClient(config, clock=lambda: now[0], wall_clock=lambda: wall[0])
    runs = tmp_path / "runs"

    kube.get(path("api", "v1", "namespaces", "default"))
    kube.get(path("api", "v1", "namespaces", "default"))
    assert runs.read_text() == "1"  # cached while valid
    now[0] += 3600 - 60  # within the refresh margin of the expiry
    kube.get(path("api", "v1", "namespaces", "default"))
    assert runs.read_text() == "2"

    (tmp_path / "expiry").write_text("")  # no expiry: kept until the server refuses it
    (tmp_path / "bad-once").write_text("")
    now[0] += 10_000
    with pytest.raises(Unauthorized):
        kube.get(path("api", "v1", "namespaces", "default"))
    assert runs.read_text() == "3"
    kube.get(path("api", "v1", "namespaces", "default"))  # the 401 made it run again
    assert runs.read_text() == "4"
    kube.get(path("api", "v1", "namespaces", "default"))
    assert runs.read_text() == "4"
    kube.close()


def test_a_failing_exec_plugin_is_a_transient_error_naming_it(
    tmp_path: Path, control_plane: ControlPlane
) -> None:
    script = "import sys; sys.stderr.write('sso session expired'); sys.exit(3)"
    kube = KubeClient(from_kubeconfig(_plugin_kubeconfig(tmp_path, control_plane, script)))
    with pytest.raises(Transient, match="exited 3: sso session expired"):
        kube.get(path("api", "v1", "namespaces", "default"))
    kube.close()


def test_exec_plugin_entry_from_kubeconfig(tmp_path: Path) -> None:
    config_path = tmp_path / "config"
    config_path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443'}}]\n"
        "users: [{name: u, user: {exec: {command: aws, args: [eks, get-token],"
        " env: [{name: AWS_PROFILE, value: dev}]}}}]\n"
    )
    plugin = from_kubeconfig(config_path).exec_plugin
    assert plugin == ExecPlugin(
        "aws", ("eks", "get-token"), (("AWS_PROFILE", "dev"),), "client.authentication.k8s.io/v1"
    )
