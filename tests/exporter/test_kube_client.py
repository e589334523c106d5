"""The exporter's own API client: kubeconfig / in-cluster loading, error mapping, token
rotation (against the real API server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.kube import (
    Conflict,
    Gone,
    KubeClient,
    NotFound,
    PodApi,
    Rejected,
    Retryable,
    error_for_status,
)
from exporter.kubeconfig import ClusterConfig, KubeconfigError, from_kubeconfig, in_cluster
from tests.controlplane.cluster import ControlPlane

KUBECONFIG = """
apiVersion: v1
kind: Config
current-context: main
contexts:
- name: main
  context: {cluster: c1, user: u1}
- name: other
  context: {cluster: c1, user: exec-user}
clusters:
- name: c1
  cluster: {server: "https://10.0.0.1:6443/", certificate-authority: pki/ca.crt}
users:
- name: u1
  user: {token: abc, client-certificate-data: Y2VydA==, client-key-data: a2V5}
- name: exec-user
  user: {exec: {command: aws}}
"""


def test_kubeconfig_fields_and_relative_paths(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(KUBECONFIG)
    config = from_kubeconfig(path)
    assert config.server == "https://10.0.0.1:6443"
    assert config.ca_file == tmp_path / "pki" / "ca.crt"
    assert config.token == "abc"
    assert config.client_cert_file is not None and config.client_key_file is not None
    assert config.client_cert_file.read_bytes() == b"cert"
    assert config.client_key_file.read_bytes() == b"key"
    config.client_cert_file.unlink()
    config.client_key_file.unlink()


@pytest.mark.parametrize(
    "text,context,message",
    [
        pytest.param(KUBECONFIG, "other", "exec/auth-provider plugin", id="exec-plugin"),
        pytest.param(KUBECONFIG, "missing", "contexts has no entry named 'missing'", id="ctx"),
        pytest.param("- a\n", None, "not a kubeconfig mapping", id="not-a-mapping"),
        pytest.param(
            KUBECONFIG.replace("https://10.0.0.1:6443/", "10.0.0.1"), None, "no https server",
            id="no-scheme",
        ),
    ],
)  # fmt: skip
def test_kubeconfig_errors_name_the_file(
    tmp_path: Path, text: str, context: str | None, message: str
) -> None:
    path = tmp_path / "config"
    path.write_text(text)
    with pytest.raises(KubeconfigError, match=message) as err:
        from_kubeconfig(path, context)
    assert str(path) in str(err.value)


def test_in_cluster(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t")
    config = in_cluster(
        tmp_path, {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    )
    assert config == ClusterConfig(
        server="https://[fd00::1]:443", ca_file=tmp_path / "ca.crt", token_file=tmp_path / "token"
    )
    with pytest.raises(KubeconfigError, match="KUBERNETES_SERVICE_HOST"):
        in_cluster(tmp_path, {})


@pytest.mark.parametrize(
    "status,error",
    [
        pytest.param(404, NotFound, id="404"),
        pytest.param(409, Conflict, id="409"),
        pytest.param(410, Gone, id="410"),
        pytest.param(429, Retryable, id="429"),
        pytest.param(500, Retryable, id="500"),
        pytest.param(503, Retryable, id="503"),
        pytest.param(401, Rejected, id="401"),
        pytest.param(403, Rejected, id="403"),
        pytest.param(422, Rejected, id="422"),
    ],
)
def test_error_for_status(status: int, error: type[Exception]) -> None:
    result = error_for_status(status, "patch pod a/b", b'{"kind":"Status","message":"why"}')
    assert type(result) is error
    assert str(result) == f"patch pod a/b: HTTP {status}: why"


@pytest.mark.controlplane
def test_token_file_is_reread(control_plane: ControlPlane, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("not-a-valid-token\n")
    now = [0.0]
    client = KubeClient(
        ClusterConfig(server=control_plane.server, ca_file=control_plane.ca_file, token_file=token),
        clock=lambda: now[0],
    )
    api = PodApi(client)
    with pytest.raises(Rejected, match="HTTP 401"):
        api.list_node_pods("n")
    token.write_text(control_plane.admin_token + "\n")  # rotated by the kubelet
    now[0] += 61
    _, items = api.list_node_pods("n")
    assert items == []


@pytest.mark.controlplane
def test_unreachable_server_is_retryable(control_plane: ControlPlane) -> None:
    client = KubeClient(
        ClusterConfig(server="https://127.0.0.1:1", ca_file=control_plane.ca_file, token="t"),
        connect_timeout_s=1,
    )
    with pytest.raises(Retryable, match="list pods of node n"):
        PodApi(client).list_node_pods("n")


@pytest.mark.controlplane
def test_inline_ca_data_verifies_the_server(control_plane: ControlPlane) -> None:
    ca = control_plane.ca_file.read_text()
    config = ClusterConfig(server=control_plane.server, ca_data=ca, token=control_plane.admin_token)
    assert PodApi(KubeClient(config)).list_node_pods("n")[1] == []
