"""The bearer token of a :class:`~exporter.kubesettings.ClusterConfig`, kept current.

* inline ``token``: used as is;
* ``tokenFile`` (and the in-cluster projected token): read with a size bound, and again
  every :data:`TOKEN_REREAD_S` and after a 401, so rotation is picked up (as client-go's
  cached file token source does; the kubernetes library reads a kubeconfig's file once);
* ``exec`` plugins (EKS ``aws eks get-token``, GKE ``gke-gcloud-auth-plugin``, AKS
  ``kubelogin``): run by the library's ``ExecProvider`` (the ExecCredential protocol:
  ``KUBERNETES_EXEC_INFO``, the answer's checks) through ``exporter/boundedexec.py``,
  which bounds the plugin's output and time; the token is renewed
  :data:`EXEC_REFRESH_MARGIN_S` before its ``expirationTimestamp`` and after a 401.

Failures raise :class:`CredentialError`, one line naming the file or plugin; the client
maps them to ``Transient`` (retried with backoff, nothing cached).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from exporter.kubesettings import ClusterConfig, ExecPlugin, KubeconfigError, read_bounded

TOKEN_REREAD_S = 60.0
#: An exec plugin's token is renewed this long before it expires.
EXEC_REFRESH_MARGIN_S = 60.0
#: The largest token file read (a projected ServiceAccount token is about 1 KiB).
MAX_TOKEN_BYTES = 64 * 1024
#: The most an exec plugin may print (an ExecCredential is a few KiB) and its time.
EXEC_MAX_OUTPUT_BYTES = 1024 * 1024
EXEC_TIMEOUT_S = 30.0
#: A plugin that failed is not run again for this long (its error is raised instead): a
#: client retrying requests must not start one plugin per request.
EXEC_FAILURE_HOLD_S = 5.0
_REPORT_BYTES = 2048
WRAPPER = Path(__file__).with_name("boundedexec.py")


class CredentialError(RuntimeError):
    """No usable token could be had; the message names the file or plugin."""


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def run_exec_plugin(plugin: ExecPlugin) -> tuple[str, float | None]:
    """Run the plugin (bounded) through the library; its token and expiry (Unix time)."""
    import tempfile

    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.dateutil import parse_rfc3339
    from kubernetes.config.exec_provider import ExecProvider
    from kubernetes.config.kube_config import ConfigNode

    name = f"exec plugin {plugin.command}"
    handle, report = tempfile.mkstemp(prefix="numa-exec-", suffix=".txt")
    os.close(handle)
    bounds = [str(EXEC_MAX_OUTPUT_BYTES), str(EXEC_TIMEOUT_S), report]
    wrapped: dict[str, Any] = {
        "apiVersion": plugin.api_version,
        "command": sys.executable,
        "args": ["-I", "-S", str(WRAPPER), *bounds, "--", plugin.command, *plugin.args],
        "env": [{"name": key, "value": value} for key, value in plugin.env],
    }
    cluster = None
    if plugin.cluster is not None:
        wrapped["provideClusterInfo"] = True
        cluster = ConfigNode("cluster", dict(plugin.cluster))
    try:
        provider = ExecProvider(ConfigNode("exec", wrapped), str(plugin.cwd or ""), cluster)
        status = provider.run()
    except Exception as exc:
        with open(report, "rb") as reader:
            reason = reader.read(_REPORT_BYTES).decode("utf-8", errors="replace").strip()
        if not reason:  # the wrapper passed the output on: the library refused it
            reason = _one_line(exc)
            if not isinstance(exc, ConfigException):  # e.g. JSON that is not an object
                reason = f"its output is not an ExecCredential ({reason})"
        raise CredentialError(f"{name}: {reason}") from None
    finally:
        os.unlink(report)
    token = status.get("token") if isinstance(status, dict) else None
    if not isinstance(token, str) or not token:
        what = (
            "a client certificate"
            if isinstance(status, dict) and status.get("clientCertificateData")
            else "no token"
        )
        raise CredentialError(f"{name}: the credential carries {what}; only tokens are supported")
    expiry = status.get("expirationTimestamp")
    if expiry is None:
        return token, None
    try:
        return token, parse_rfc3339(str(expiry)).timestamp()
    except ValueError:
        raise CredentialError(
            f"{name}: expirationTimestamp {str(expiry)[:64]!r} is not RFC 3339"
        ) from None


class BearerToken:
    """The token to send now; thread-safe."""

    def __init__(
        self,
        config: ClusterConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        run_exec: Callable[[ExecPlugin], tuple[str, float | None]] = run_exec_plugin,
    ) -> None:
        self._config = config
        self._clock = clock
        self._wall_clock = wall_clock
        self._run_exec = run_exec
        self._token = config.token
        #: when the token file or exec plugin is due again (monotonic clock)
        self._due = float("-inf")
        self._failure: CredentialError | None = None
        self._lock = threading.Lock()

    def current(self) -> str | None:
        """The token (None: none configured); renewed when due."""
        config = self._config
        if config.exec_plugin is None and config.token_file is None:
            return self._token
        with self._lock:
            if self._clock() >= self._due:
                if config.exec_plugin is not None:
                    self._renew_exec(config.exec_plugin)
                elif config.token_file is not None:
                    self._read_file(config.token_file)
            elif self._failure is not None:
                raise CredentialError(str(self._failure))  # held: EXEC_FAILURE_HOLD_S
            return self._token

    def refused(self) -> None:
        """The API server answered 401: get a new token before the next request."""
        with self._lock:
            self._due = float("-inf")

    def _read_file(self, path: Path) -> None:
        try:
            text = read_bounded(path, "token file", limit=MAX_TOKEN_BYTES)
        except KubeconfigError as exc:
            raise CredentialError(str(exc)) from None
        self._token = text.strip()
        self._due = self._clock() + TOKEN_REREAD_S

    def _renew_exec(self, plugin: ExecPlugin) -> None:
        try:
            token, expires_at = self._run_exec(plugin)
        except CredentialError as exc:
            self._token, self._failure = None, exc
            self._due = self._clock() + EXEC_FAILURE_HOLD_S
            raise
        self._token, self._failure = token, None
        if expires_at is None:
            self._due = float("inf")  # until the API server refuses it
        else:
            left = expires_at - self._wall_clock() - EXEC_REFRESH_MARGIN_S
            self._due = self._clock() + max(0.0, left)
