"""Kubeconfig and in-cluster loading for the shared client (``exporter.kubesettings``: the
kubernetes library's loaders behind bounds), each credential kind checked against the
real API server."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import Transient, Unauthorized
from exporter.kubesettings import (
    ClusterConfig,
    KubeconfigError,
    default_config,
    from_kubeconfig,
    in_cluster,
)
from tests.controlplane.cluster import ControlPlane

NAMESPACES = path("api", "v1", "namespaces")
REPO = Path(__file__).resolve().parents[2]

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
  user: {token: abc, client-certificate-data: CERT, client-key-data: KEY}
- name: exec-user
  user: {exec: {command: aws, args: [eks, get-token], env: [{name: AWS_PROFILE, value: dev}]}}
- name: provider-user
  user: {auth-provider: {name: gcp}}
"""


def _self_signed(directory: Path, name: str) -> tuple[bytes, bytes]:
    """A PEM certificate and key (a CA and a client pair alike, for loading)."""
    key, crt = directory / f"{name}.key", directory / f"{name}.crt"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-subj", f"/CN={name}", "-days", "1", "-out", str(crt)],
        check=True, capture_output=True,
    )  # fmt: skip
    return crt.read_bytes(), key.read_bytes()


@pytest.fixture(scope="module")
def pem(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    return _self_signed(tmp_path_factory.mktemp("pem"), "test")


def _sample(directory: Path, pem: tuple[bytes, bytes], text: str = KUBECONFIG) -> Path:
    """KUBECONFIG in ``directory``, with its CA file and inline client pair real PEM."""
    (directory / "pki").mkdir(exist_ok=True)
    (directory / "pki" / "ca.crt").write_bytes(pem[0])
    path = directory / "config"
    path.write_text(text.replace("CERT", _b64(pem[0])).replace("KEY", _b64(pem[1])))
    return path


def test_kubeconfig_fields_and_relative_paths(tmp_path: Path, pem: tuple[bytes, bytes]) -> None:
    config = from_kubeconfig(_sample(tmp_path, pem))
    assert config.server == "https://10.0.0.1:6443"
    assert config.ca_file == tmp_path / "pki" / "ca.crt"
    assert config.token == "abc"
    # inline data: files the library writes (and removes at exit)
    assert config.client_cert_file is not None and config.client_key_file is not None
    assert config.client_cert_file.read_bytes() == pem[0]
    assert config.client_key_file.read_bytes() == pem[1]


@pytest.mark.parametrize(
    "text,context,message",
    [
        pytest.param(
            KUBECONFIG.replace("context: {cluster: c1, user: exec-user}",
                               "context: {cluster: c1, user: provider-user}"),
            "other", "legacy auth-provider plugin", id="auth-provider",
        ),
        pytest.param(
            KUBECONFIG.replace("{command: aws, args", "{command: 7, args"),
            "other", "exec.command must be a non-empty string", id="exec-no-command",
        ),
        pytest.param(
            KUBECONFIG, "missing", "Expected object with name missing in kube-config/contexts",
            id="ctx",
        ),
        pytest.param(
            KUBECONFIG.replace("current-context: main", ""), None, "Expected key current-context",
            id="no-current-context",
        ),
        pytest.param("- a\n", None, "not a kubeconfig mapping", id="not-a-mapping"),
        pytest.param(
            KUBECONFIG.replace("https://10.0.0.1:6443/", "10.0.0.1"), None, "no https server",
            id="no-scheme",
        ),
    ],
)  # fmt: skip
def test_kubeconfig_errors_name_the_file(
    tmp_path: Path, pem: tuple[bytes, bytes], text: str, context: str | None, message: str
) -> None:
    path = _sample(tmp_path, pem, text)
    with pytest.raises(KubeconfigError, match=message) as err:
        from_kubeconfig(path, context)
    assert str(path) in str(err.value)


@pytest.mark.parametrize(
    "context", [pytest.param(None, id="current"), pytest.param("other", id="exec-plugin")]
)
def test_json_kubeconfig_reads_as_the_yaml_one(
    tmp_path: Path, pem: tuple[bytes, bytes], context: str | None
) -> None:
    """JSON is YAML too: the same file as JSON gives the same configuration."""
    as_yaml = _sample(tmp_path, pem)
    as_json = tmp_path / "config.json"
    as_json.write_text("\n  " + json.dumps(yaml.safe_load(as_yaml.read_text()), indent=1))
    from_yaml, from_json = from_kubeconfig(as_yaml, context), from_kubeconfig(as_json, context)
    assert from_json == from_yaml
    assert (from_json.exec_plugin is None) == (context is None)


def test_flow_mapping_kubeconfig_is_yaml_not_json(tmp_path: Path) -> None:
    """A file that opens with ``{`` but is not JSON is read as YAML."""
    config = tmp_path / "config"
    config.write_text(
        "{current-context: c, contexts: [{name: c, context: {cluster: k}}],\n"
        " clusters: [{name: k, cluster: {server: 'https://10.0.0.2:6443'}}]}\n"
    )
    assert from_kubeconfig(config).server == "https://10.0.0.2:6443"
    config.write_text("{not json: [}")
    with pytest.raises(KubeconfigError, match=f"{config}: not a YAML kubeconfig"):
        from_kubeconfig(config)


def test_in_cluster(tmp_path: Path, pem: tuple[bytes, bytes]) -> None:
    (tmp_path / "token").write_text("t")
    (tmp_path / "ca.crt").write_bytes(pem[0])
    config = in_cluster(
        tmp_path, {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    )
    assert config == ClusterConfig(
        server="https://[fd00::1]:443", ca_file=tmp_path / "ca.crt", token_file=tmp_path / "token"
    )
    with pytest.raises(KubeconfigError, match="KUBERNETES_SERVICE_HOST"):
        in_cluster(tmp_path, {})
    (tmp_path / "ca.crt").unlink()
    with pytest.raises(KubeconfigError, match=f"in-cluster ServiceAccount CA: {tmp_path}"):
        in_cluster(tmp_path, {"KUBERNETES_SERVICE_HOST": "h", "KUBERNETES_SERVICE_PORT": "1"})


@pytest.mark.controlplane
def test_token_file_is_reread(control_plane: ControlPlane, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("not-a-valid-token\n")
    now = [0.0]
    client = KubeClient(
        ClusterConfig(server=control_plane.server, ca_file=control_plane.ca_file, token_file=token),
        clock=lambda: now[0],
    )
    with pytest.raises(Unauthorized, match="HTTP 401"):
        client.get(NAMESPACES)
    token.write_text(control_plane.admin_token + "\n")  # rotated by the kubelet
    now[0] += 61
    assert client.get(NAMESPACES)["kind"] == "NamespaceList"


@pytest.mark.controlplane
def test_unreachable_server_is_transient(control_plane: ControlPlane) -> None:
    client = KubeClient(
        ClusterConfig(server="https://127.0.0.1:1", ca_file=control_plane.ca_file, token="t"),
        connect_timeout_s=1,
    )
    with pytest.raises(Transient, match="GET /api/v1/namespaces") as err:
        client.get(NAMESPACES)
    assert err.value.status == 0


@pytest.mark.controlplane
def test_inline_ca_data_verifies_the_server(control_plane: ControlPlane) -> None:
    ca = control_plane.ca_file.read_text()
    config = ClusterConfig(server=control_plane.server, ca_data=ca, token=control_plane.admin_token)
    assert KubeClient(config).get(NAMESPACES)["kind"] == "NamespaceList"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _client_certificate(cp: ControlPlane, directory: Path, *, group: str) -> tuple[Path, Path]:
    """A client certificate for user ``kind-admin`` in ``group``, signed by the server's CA
    (the API server trusts that CA for client certificates: ``--client-ca-file``)."""
    pki = cp.workdir / "pki"
    key, csr, crt = directory / "client.key", directory / "client.csr", directory / "client.crt"

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    openssl("genrsa", "-out", str(key), "2048")
    openssl("req", "-new", "-key", str(key), "-subj", f"/O={group}/CN=kind-admin", "-out", str(csr))
    openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(pki / "ca.crt"), "-CAkey", str(pki / "ca.key"),
        "-CAcreateserial", "-CAserial", str(directory / "ca.srl"), "-days", "1", "-out", str(crt),
    )  # fmt: skip
    return crt, key


def _kubeconfig(directory: Path, cluster: str, user: str) -> Path:
    config = directory / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
        f"clusters:\n- name: k\n  cluster: {cluster}\n"
        f"users:\n- name: u\n  user: {user}\n"
    )
    return config


@pytest.mark.controlplane
@pytest.mark.parametrize("inline", [pytest.param(True, id="data"), pytest.param(False, id="files")])
def test_client_certificate_kubeconfig_like_kind_writes(
    control_plane: ControlPlane, tmp_path: Path, inline: bool
) -> None:
    crt, key = _client_certificate(control_plane, tmp_path, group="system:masters")
    if inline:
        ca = _b64(control_plane.ca_file.read_bytes())
        cluster = f"{{server: {control_plane.server}, certificate-authority-data: {ca}}}"
        user = (
            f"{{client-certificate-data: {_b64(crt.read_bytes())}, "
            f"client-key-data: {_b64(key.read_bytes())}}}"
        )
    else:
        cluster = (
            f"{{server: {control_plane.server}, certificate-authority: {control_plane.ca_file}}}"
        )
        user = f"{{client-certificate: {crt.name}, client-key: {key.name}}}"  # relative paths
    config = from_kubeconfig(_kubeconfig(tmp_path, cluster, user))
    assert config.token is None and config.token_file is None
    assert KubeClient(config).get(NAMESPACES)["kind"] == "NamespaceList"


@pytest.mark.controlplane
# urllib3 warns on every unverified request; skipping verification is what this test is about.
@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_token_file_and_insecure_skip_tls_verify(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    (tmp_path / "token").write_text(control_plane.admin_token + "\n")
    config = from_kubeconfig(
        _kubeconfig(
            tmp_path,
            f"{{server: {control_plane.server}, insecure-skip-tls-verify: true}}",
            "{tokenFile: token}",
        )
    )
    assert config.insecure_skip_tls_verify and config.token_file == tmp_path / "token"
    assert KubeClient(config).get(NAMESPACES)["kind"] == "NamespaceList"


@pytest.mark.controlplane
def test_server_certificate_is_verified_against_the_ca(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    other_ca = tmp_path / "other-ca.crt"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
         str(tmp_path / "other.key"), "-subj", "/CN=other", "-days", "1", "-out", str(other_ca)],
        check=True, capture_output=True,
    )  # fmt: skip
    config = ClusterConfig(server=control_plane.server, ca_file=other_ca, token="t")
    with pytest.raises(Transient, match="SSL") as err:
        KubeClient(config).get(NAMESPACES)
    assert err.value.status == 0


@pytest.mark.controlplane
def test_in_cluster_service_account_reaches_the_server(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    (tmp_path / "token").write_text(control_plane.admin_token)
    (tmp_path / "ca.crt").write_bytes(control_plane.ca_file.read_bytes())
    port = control_plane.server.rsplit(":", 1)[1]
    env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port}
    config = in_cluster(tmp_path, env)
    assert KubeClient(config).get(NAMESPACES)["kind"] == "NamespaceList"


def test_default_config_order(tmp_path: Path, pem: tuple[bytes, bytes]) -> None:
    (tmp_path / ".kube").mkdir()
    home_config = _sample(tmp_path / ".kube", pem)
    listed = _sample(tmp_path, pem, KUBECONFIG.replace("10.0.0.1", "10.0.0.2"))
    assert default_config({}, tmp_path).server == "https://10.0.0.1:6443"
    assert default_config({"KUBECONFIG": f"{listed}:{home_config}"}, tmp_path).server == (
        "https://10.0.0.2:6443"
    )
    with pytest.raises(KubeconfigError, match="not running in a cluster"):
        default_config({}, tmp_path / "nowhere")


@pytest.mark.parametrize(
    "field,value",
    [
        pytest.param("certificate-authority-data", "not base64!", id="ca-data"),
        pytest.param("client-certificate-data", "not base64!", id="cert-data"),
    ],
)
def test_bad_inline_data_names_the_file_and_field(tmp_path: Path, field: str, value: str) -> None:
    if field.startswith("certificate"):
        config = _kubeconfig(tmp_path, f"{{server: https://h, {field}: '{value}'}}", "{}")
    else:
        config = _kubeconfig(tmp_path, "{server: https://h}", f"{{{field}: '{value}'}}")
    with pytest.raises(KubeconfigError, match=f"{field} is not base64") as err:
        from_kubeconfig(config)
    assert str(config) in str(err.value)


@pytest.mark.controlplane
def test_a_token_file_turned_hostile_is_a_transient_error_naming_it(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """Re-read every minute, the token file is bounded every time: a rotation that left
    something huge (or not a file) in its place is refused, not read whole."""
    token = tmp_path / "token"
    token.write_text(control_plane.admin_token)
    now = [0.0]
    client = KubeClient(
        ClusterConfig(server=control_plane.server, ca_file=control_plane.ca_file, token_file=token),
        clock=lambda: now[0],
    )
    assert client.get(NAMESPACES)["kind"] == "NamespaceList"
    with token.open("wb") as big:
        big.truncate(1 << 30)  # sparse: 1 GiB that costs no disk
    now[0] += 61
    with pytest.raises(
        Transient, match=f"token file: {token} is larger than 64 KiB, the most read"
    ) as err:
        client.get(NAMESPACES)
    assert err.value.status == 0
    token.unlink()
    token.symlink_to("/dev/zero")
    with pytest.raises(Transient, match=f"token file: {token} is not a regular file"):
        client.get(NAMESPACES)
    token.unlink()
    token.write_text(control_plane.admin_token)
    assert client.get(NAMESPACES)["kind"] == "NamespaceList"
