"""Kubeconfig ``exec`` credential plugins (client.authentication.k8s.io ExecCredential), as
EKS (``aws eks get-token``), GKE (``gke-gcloud-auth-plugin``) and AKS (``kubelogin``)
kubeconfigs use them: run the command, read a bearer token and its expiry from its JSON.

``parse_exec_credential`` is pure; ``run_exec_plugin`` is the edge that runs the command.
Only token credentials are supported (a credential carrying a client certificate gets a
clear error).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

EXEC_TIMEOUT_S = 30.0


class ExecCredentialError(RuntimeError):
    """The plugin could not be run or answered something unusable; the message says which."""


@dataclass(frozen=True)
class ExecPlugin:
    """A kubeconfig ``users[].user.exec`` entry."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = "client.authentication.k8s.io/v1"


@dataclass(frozen=True)
class ExecCredential:
    token: str
    #: Unix time the token expires at; None = until the API server refuses it.
    expires_at: float | None = None


def parse_exec_credential(text: str, plugin: str) -> ExecCredential:
    """Read the plugin's stdout. Pure."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ExecCredentialError(f"exec plugin {plugin}: output is not JSON") from exc
    status = doc.get("status") if isinstance(doc, dict) else None
    if not isinstance(status, dict):
        raise ExecCredentialError(f"exec plugin {plugin}: no status in its ExecCredential")
    token = status.get("token")
    if not isinstance(token, str) or not token:
        what = "a client certificate" if status.get("clientCertificateData") else "no token"
        raise ExecCredentialError(
            f"exec plugin {plugin}: the credential carries {what}; only tokens are supported"
        )
    expiry = status.get("expirationTimestamp")
    if expiry is None:
        return ExecCredential(token)
    try:
        expires_at = datetime.fromisoformat(str(expiry).replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise ExecCredentialError(
            f"exec plugin {plugin}: expirationTimestamp {expiry!r} is not RFC 3339"
        ) from exc
    return ExecCredential(token, expires_at)


def run_exec_plugin(plugin: ExecPlugin) -> ExecCredential:
    """Run the plugin as kubectl does (non-interactive) and return its credential."""
    env = {**os.environ, **dict(plugin.env)}
    env["KUBERNETES_EXEC_INFO"] = json.dumps(
        {
            "apiVersion": plugin.api_version,
            "kind": "ExecCredential",
            "spec": {"interactive": False},
        }
    )
    import subprocess  # only kubeconfigs with an exec plugin need it

    try:
        proc = subprocess.run(
            [plugin.command, *plugin.args],
            env=env,
            capture_output=True,
            text=True,
            timeout=EXEC_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExecCredentialError(f"exec plugin {plugin.command}: {exc}") from exc
    if proc.returncode != 0:
        raise ExecCredentialError(
            f"exec plugin {plugin.command} exited {proc.returncode}: {proc.stderr.strip()[-500:]}"
        )
    return parse_exec_credential(proc.stdout, plugin.command)


def plugin_from_kubeconfig(entry: Mapping[str, object], where: str) -> ExecPlugin:
    """An ``exec`` mapping of a kubeconfig user; raises ValueError naming ``where``."""
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        raise ValueError(f"{where}.command must be a non-empty string")
    args = entry.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError(f"{where}.args must be a list of strings")
    env_items = entry.get("env") or []
    env: list[tuple[str, str]] = []
    if not isinstance(env_items, list):
        raise ValueError(f"{where}.env must be a list of {{name, value}}")
    for i, item in enumerate(env_items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ValueError(f"{where}.env[{i}] must have a string name")
        env.append((item["name"], str(item.get("value", ""))))
    api_version = entry.get("apiVersion") or "client.authentication.k8s.io/v1"
    return ExecPlugin(command, tuple(args), tuple(env), str(api_version))
