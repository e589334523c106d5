"""Where and how to reach the API server: a kubeconfig file or the in-cluster
ServiceAccount, resolved by the kubernetes library's own loaders (``KubeConfigLoader``,
``InClusterConfigLoader``), behind bounds the library does not have.

The library reads whatever it is pointed at whole: a kubeconfig that is ``/dev/zero``, a
``tokenFile`` or CA that is a multi-gigabyte file grow the process until MemoryError.
So every input is checked before the library sees it, and refused in one line naming
the file and field (:class:`KubeconfigError`): the kubeconfig is read with a size
bound, must be UTF-8 YAML (libyaml's C loader) and a mapping; every file the chosen
context names (``certificate-authority``, ``client-certificate``, ``client-key``,
``tokenFile``) must be a regular file within :data:`MAX_FILE_BYTES`; inline ``-data``
fields must be base64; the TLS material must load. The library then resolves the context,
relative paths (against the kubeconfig's directory, as kubectl does) and inline data
(temporary files it removes at exit).

Credentials are not left to the library's loader: it reads a ``tokenFile`` once (the
projected ServiceAccount token rotates) and runs exec plugins unbounded, without a
timeout, logging and swallowing their failures. :class:`ClusterConfig` keeps the
credential's source, and ``exporter.kubetoken`` renews it (the library's
``ExecProvider`` runs the plugin, through a bounded wrapper). Legacy ``auth-provider``
plugins are refused; ``username``/``password`` (basic auth, gone from the API server)
are ignored.
"""

from __future__ import annotations

import base64
import copy
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IN_CLUSTER_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
#: The largest kubeconfig read (kubectl's own are a few KiB; inline certificates add a
#: few more per user).
MAX_KUBECONFIG_BYTES = 4 * 1024 * 1024
#: The largest file a kubeconfig may name (a CA bundle, a certificate, a key, a token).
MAX_FILE_BYTES = 4 * 1024 * 1024
DEFAULT_EXEC_API_VERSION = "client.authentication.k8s.io/v1"
#: Credential fields this module hands to ``exporter.kubetoken``, not to the library.
_CREDENTIAL_FIELDS = ("token", "tokenFile", "exec", "username", "password", "auth-provider")
_FILE_FIELDS = {
    "cluster": ("certificate-authority",),
    "user": ("client-certificate", "client-key", "tokenFile"),
}
_DATA_FIELDS = {
    "cluster": ("certificate-authority-data",),
    "user": ("client-certificate-data", "client-key-data"),
}


class KubeconfigError(ValueError):
    """The API server configuration cannot be used; the message names the file and field."""


@dataclass(frozen=True)
class ExecPlugin:
    """A kubeconfig ``users[].user.exec`` entry: a command printing an ExecCredential."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = DEFAULT_EXEC_API_VERSION
    #: where it runs (the kubeconfig's directory, as kubectl runs it)
    cwd: Path | None = None
    #: the cluster entry, when the plugin asks for it (``provideClusterInfo``)
    cluster: tuple[tuple[str, Any], ...] | None = None


@dataclass(frozen=True)
class ClusterConfig:
    """One API server and how to authenticate to it."""

    server: str
    ca_file: Path | None = None
    #: PEM text of the CA (inline, not a file)
    ca_data: str | None = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None
    token: str | None = None
    #: read again every minute: the projected ServiceAccount token rotates
    token_file: Path | None = None
    client_cert_file: Path | None = None
    client_key_file: Path | None = None
    exec_plugin: ExecPlugin | None = None


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit >> 10} KiB"


def check_file(path: Path, where: str, *, limit: int = MAX_FILE_BYTES) -> None:
    """Refuse a file that is not a regular file of at most ``limit`` bytes (``/dev/zero``,
    a FIFO that would block the read, a huge file) in one line naming ``where``."""
    try:
        info = path.stat()
    except OSError as exc:
        raise KubeconfigError(f"{where}: {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise KubeconfigError(f"{where}: {path} is not a regular file")
    if info.st_size > limit:
        raise KubeconfigError(f"{where}: {path} is larger than {_size(limit)}, the most read")


def read_bounded(path: Path, where: str, *, limit: int) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes (read with the bound
    too: the file may grow between the check and the read)."""
    check_file(path, where, limit=limit)
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise KubeconfigError(f"{where}: {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise KubeconfigError(f"{where}: {path} is larger than {_size(limit)}, the most read")
    if b"\0" in data:
        raise KubeconfigError(f"{where}: {path} is not a text file (it contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KubeconfigError(
            f"{where}: {path} is not UTF-8 text (invalid byte at offset {exc.start})"
        ) from None


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _load_document(path: Path) -> dict[str, Any]:
    import yaml

    text = read_bounded(path, "kubeconfig", limit=MAX_KUBECONFIG_BYTES)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        doc = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"{path}: not a YAML kubeconfig ({_one_line(exc)})") from None
    if not isinstance(doc, dict):
        raise KubeconfigError(f"{path}: not a kubeconfig mapping")
    return doc


def _named(doc: Mapping[str, Any], key: str, name: object) -> dict[str, Any]:
    """The first ``doc[key]`` entry called ``name`` (the library's rule), its inner map."""
    for entry in doc.get(key) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            inner = entry.get(key[:-1])
            return inner if isinstance(inner, dict) else {}
    return {}


def _exec_plugin(entry: object, where: str, cwd: Path, cluster: Mapping[str, Any]) -> ExecPlugin:
    if not isinstance(entry, dict):
        raise ValueError(f"{where} must be a mapping")
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        raise ValueError(f"{where}.command must be a non-empty string")
    args = entry.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError(f"{where}.args must be a list of strings")
    env_items = entry.get("env") or []
    if not isinstance(env_items, list):
        raise ValueError(f"{where}.env must be a list of {{name, value}}")
    env: list[tuple[str, str]] = []
    for i, item in enumerate(env_items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ValueError(f"{where}.env[{i}] must have a string name")
        env.append((item["name"], str(item.get("value", ""))))
    api_version = entry.get("apiVersion") or DEFAULT_EXEC_API_VERSION
    if not isinstance(api_version, str):
        raise ValueError(f"{where}.apiVersion must be a string")
    info = tuple(sorted(cluster.items())) if entry.get("provideClusterInfo") else None
    return ExecPlugin(command, tuple(args), tuple(env), api_version, cwd, info)


def _check_inputs(
    path: Path, cluster: Mapping[str, Any], user: Mapping[str, Any], names: tuple[str, str]
) -> None:
    """Every file the context names is a bounded regular file; inline data is base64."""
    base = path.parent
    for kind, entry, name in (("cluster", cluster, names[0]), ("user", user, names[1])):
        where = f"{path}: {kind}s[{name!r}]"
        for field in _FILE_FIELDS[kind]:
            value = entry.get(field)
            if value and not entry.get(f"{field}-data"):  # the library prefers the data
                check_file(base / str(value), f"{where}.{field}")
        for field in _DATA_FIELDS[kind]:
            value = entry.get(field)
            if value is None:
                continue
            try:
                base64.b64decode(str(value), validate=True)
            except ValueError:
                raise KubeconfigError(f"{where}.{field} is not base64") from None


def from_kubeconfig(path: Path, context: str | None = None) -> ClusterConfig:
    """The configuration of ``context`` (default: the current one) in the kubeconfig."""
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import KubeConfigLoader

    doc = _load_document(path)
    # the library resolves everything but the credentials, which are ours (see above)
    stripped = copy.deepcopy(doc)
    for entry in stripped.get("users") or []:
        if isinstance(entry, dict) and isinstance(entry.get("user"), dict):
            for field in _CREDENTIAL_FIELDS:
                entry["user"].pop(field, None)
    try:
        loader = KubeConfigLoader(
            config_dict=stripped, active_context=context, config_base_path=str(path.parent)
        )
        names = loader.current_context.get("context") or {}
    except (ConfigException, KeyError, TypeError, AttributeError) as exc:
        raise KubeconfigError(f"{path}: {_one_line(exc)}") from None
    cluster_name, user_name = names.get("cluster"), names.get("user")
    cluster = _named(doc, "clusters", cluster_name)
    user = _named(doc, "users", user_name) if user_name else {}
    server = cluster.get("server")
    if not isinstance(server, str) or not server.startswith(("https://", "http://")):
        raise KubeconfigError(f"{path}: cluster {cluster_name!r} has no https server")
    if user.get("auth-provider"):
        raise KubeconfigError(
            f"{path}: user {user_name!r} uses a legacy auth-provider plugin, which "
            "this client does not support; use an exec plugin, a token or a client certificate"
        )
    _check_inputs(path, cluster, user, (str(cluster_name), str(user_name)))
    exec_plugin = None
    if user.get("exec"):
        where = f"users[{user_name!r}].exec"
        try:
            exec_plugin = _exec_plugin(user["exec"], where, path.parent, cluster)
        except ValueError as exc:
            raise KubeconfigError(f"{path}: {exc}") from None
    from kubernetes.client import Configuration

    resolved = Configuration()
    try:
        loader.load_and_set(resolved)
    except (ConfigException, ValueError, OSError) as exc:
        raise KubeconfigError(f"{path}: {_one_line(exc)}") from None
    token = user.get("token")
    token_file = user.get("tokenFile")
    config = ClusterConfig(
        server=server.rstrip("/"),
        ca_file=Path(resolved.ssl_ca_cert) if resolved.ssl_ca_cert else None,
        insecure_skip_tls_verify=not resolved.verify_ssl,
        tls_server_name=resolved.tls_server_name or None,
        proxy_url=resolved.proxy or None,
        token=str(token) if token else None,
        token_file=path.parent / str(token_file) if token_file else None,
        client_cert_file=Path(resolved.cert_file) if resolved.cert_file else None,
        client_key_file=Path(resolved.key_file) if resolved.key_file else None,
        exec_plugin=exec_plugin,
    )
    check_tls(config, str(path))
    return config


def in_cluster(
    directory: Path = IN_CLUSTER_DIR, env: Mapping[str, str] | None = None
) -> ClusterConfig:
    """The ServiceAccount's configuration (``KUBERNETES_SERVICE_HOST``/``_PORT``, the
    token and CA mounted into every pod), by the library's in-cluster loader."""
    from kubernetes.client import Configuration
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import InClusterConfigLoader

    env = dict(os.environ) if env is None else dict(env)
    if not env.get("KUBERNETES_SERVICE_HOST") or not env.get("KUBERNETES_SERVICE_PORT"):
        raise KubeconfigError(
            "not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset); pass --kubeconfig"
        )
    token_file, ca_file = directory / "token", directory / "ca.crt"
    for name, file in (("ServiceAccount token", token_file), ("ServiceAccount CA", ca_file)):
        check_file(file, f"in-cluster {name}")
    resolved = Configuration()
    try:
        InClusterConfigLoader(
            token_filename=str(token_file),
            cert_filename=str(ca_file),
            try_refresh_token=False,  # ours re-reads it bounded (exporter.kubetoken)
            environ=env,
        ).load_and_set(resolved)
    except (ConfigException, ValueError, OSError) as exc:
        raise KubeconfigError(f"in-cluster configuration: {_one_line(exc)}") from None
    config = ClusterConfig(server=resolved.host, ca_file=ca_file, token_file=token_file)
    check_tls(config, "in-cluster configuration")
    return config


def default_config(env: Mapping[str, str] | None = None, home: Path | None = None) -> ClusterConfig:
    """Without an explicit kubeconfig: in-cluster when ``KUBERNETES_SERVICE_HOST`` is set,
    else the first file of ``$KUBECONFIG``, else ``~/.kube/config``."""
    env = dict(os.environ) if env is None else dict(env)
    if env.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster(env=env)
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    path = Path(listed[0]) if listed else (home or Path.home()) / ".kube" / "config"
    if not path.exists():
        raise KubeconfigError(
            f"{path}: no kubeconfig, and not running in a cluster; pass --kubeconfig"
        )
    return from_kubeconfig(path)


def check_tls(config: ClusterConfig, where: str) -> None:
    """Load the CA and client certificate once, so a file that is not PEM is refused at
    start in one line rather than on every request."""
    if not config.server.startswith("https://"):
        return
    import ssl

    try:
        context = ssl.create_default_context()
        if config.ca_file is not None and not config.insecure_skip_tls_verify:
            context.load_verify_locations(cafile=str(config.ca_file))
        if config.ca_data is not None:
            context.load_verify_locations(cadata=config.ca_data)
        if config.client_cert_file is not None and config.client_key_file is not None:
            context.load_cert_chain(str(config.client_cert_file), str(config.client_key_file))
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise KubeconfigError(
            f"{where}: cannot load the TLS certificates ({_one_line(exc)})"
        ) from None
