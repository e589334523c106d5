"""Where and how to reach the API server: a kubeconfig file or the in-cluster
ServiceAccount. Reads files only; no network.

Feeds ``exporter.kubeclient``, the project's one API client (which avoids the kubernetes
package: see there). Supported: the current or a named context; server CA as a file
(``certificate-authority``) or inline (``certificate-authority-data``);
``insecure-skip-tls-verify``; bearer token inline (``token``) or from a file
(``tokenFile``, and the in-cluster projected token, re-read so rotation is picked up);
client certificates as files or inline ``-data`` (what Kind writes); ``exec`` credential
plugins that return a token (EKS, GKE, AKS; see ``exporter.execcredential``). The legacy
``auth-provider`` plugins are not supported (a clear :class:`KubeconfigError`).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when a kubeconfig names an exec plugin: start-up CPU
    from exporter.execcredential import ExecPlugin

IN_CLUSTER_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeconfigError(ValueError):
    """The API server configuration cannot be used; the message names the file and field."""


@dataclass(frozen=True)
class ClusterConfig:
    server: str
    ca_file: Path | None = None
    ca_data: str | None = None
    insecure_skip_tls_verify: bool = False
    token: str | None = None
    token_file: Path | None = None
    client_cert_file: Path | None = None
    client_key_file: Path | None = None
    exec_plugin: ExecPlugin | None = None


def in_cluster(
    directory: Path = IN_CLUSTER_DIR, env: dict[str, str] | None = None
) -> ClusterConfig:
    env = dict(os.environ) if env is None else env
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeconfigError(
            "not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset); pass --kubeconfig"
        )
    if ":" in host:
        host = f"[{host}]"
    token_file = directory / "token"
    if not token_file.exists():
        raise KubeconfigError(f"{token_file}: ServiceAccount token missing")
    return ClusterConfig(
        server=f"https://{host}:{port}", ca_file=directory / "ca.crt", token_file=token_file
    )


def default_config(env: Mapping[str, str] | None = None, home: Path | None = None) -> ClusterConfig:
    """Without an explicit kubeconfig: in-cluster when ``KUBERNETES_SERVICE_HOST`` is set,
    else the first file of ``$KUBECONFIG``, else ``~/.kube/config``."""
    env = dict(os.environ) if env is None else env
    if env.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster(env=dict(env))
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    path = Path(listed[0]) if listed else (home or Path.home()) / ".kube" / "config"
    if not path.exists():
        raise KubeconfigError(
            f"{path}: no kubeconfig, and not running in a cluster; pass --kubeconfig"
        )
    return from_kubeconfig(path)


def _named(doc: dict[str, Any], key: str, name: str, path: Path) -> dict[str, Any]:
    for entry in doc.get(key) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            inner = entry.get(key[:-1])
            return inner if isinstance(inner, dict) else {}
    raise KubeconfigError(f"{path}: {key} has no entry named {name!r}")


def _data_file(data: str, suffix: str, path: Path, field: str) -> Path:
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError as exc:
        raise KubeconfigError(f"{path}: {field} is not base64") from exc
    import tempfile  # only for inline certificate data

    handle, name = tempfile.mkstemp(prefix="numa-kubeconfig-", suffix=suffix)
    with os.fdopen(handle, "wb") as out:
        out.write(raw)
    return Path(name)


def _load(path: Path) -> Any:
    """The kubeconfig document. JSON (a YAML subset kubectl reads too) is parsed without
    importing the YAML parser, whose import alone costs more start-up CPU than the rest
    of the file; anything else, or JSON that does not parse, goes to YAML."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise KubeconfigError(f"{path}: cannot read kubeconfig ({exc})") from exc
    if text.lstrip().startswith("{"):
        import json

        try:
            return json.loads(text)
        except ValueError:
            pass  # a YAML flow mapping, say: YAML decides
    import yaml  # a DaemonSet runs in-cluster: no YAML to read

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"{path}: cannot read kubeconfig ({exc})") from exc


def from_kubeconfig(path: Path, context: str | None = None) -> ClusterConfig:
    doc = _load(path)
    if not isinstance(doc, dict):
        raise KubeconfigError(f"{path}: not a kubeconfig mapping")
    name = context or doc.get("current-context")
    if not name:
        raise KubeconfigError(f"{path}: no current-context")
    ctx = _named(doc, "contexts", str(name), path)
    cluster = _named(doc, "clusters", str(ctx.get("cluster")), path)
    user = _named(doc, "users", str(ctx.get("user")), path) if ctx.get("user") else {}
    base = path.parent

    def rel(value: Any) -> Path | None:
        return (base / str(value)) if value else None

    server = cluster.get("server")
    if not isinstance(server, str) or not server.startswith(("https://", "http://")):
        raise KubeconfigError(f"{path}: cluster {ctx.get('cluster')!r} has no https server")
    if user.get("auth-provider"):
        raise KubeconfigError(
            f"{path}: user {ctx.get('user')!r} uses a legacy auth-provider plugin, which "
            "this client does not support; use an exec plugin, a token or a client certificate"
        )
    exec_plugin = None
    if user.get("exec"):
        if not isinstance(user["exec"], dict):
            raise KubeconfigError(f"{path}: users[{ctx.get('user')!r}].exec must be a mapping")
        from exporter.execcredential import plugin_from_kubeconfig

        try:
            exec_plugin = plugin_from_kubeconfig(user["exec"], f"users[{ctx.get('user')!r}].exec")
        except ValueError as exc:
            raise KubeconfigError(f"{path}: {exc}") from exc
    cert, key = rel(user.get("client-certificate")), rel(user.get("client-key"))
    if user.get("client-certificate-data"):
        cert = _data_file(user["client-certificate-data"], ".crt", path, "client-certificate-data")
    if user.get("client-key-data"):
        key = _data_file(user["client-key-data"], ".key", path, "client-key-data")
    ca_data = cluster.get("certificate-authority-data")
    try:
        ca_text = base64.b64decode(ca_data, validate=True).decode() if ca_data else None
    except ValueError as exc:  # binascii.Error and UnicodeDecodeError are ValueErrors
        raise KubeconfigError(f"{path}: certificate-authority-data is not base64 PEM") from exc
    return ClusterConfig(
        server=server.rstrip("/"),
        ca_file=rel(cluster.get("certificate-authority")),
        ca_data=ca_text,
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify")),
        token=user.get("token"),
        token_file=rel(user.get("tokenFile")),
        client_cert_file=cert,
        client_key_file=key,
        exec_plugin=exec_plugin,
    )
