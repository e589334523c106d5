"""Kubeconfig exec credential plugins (EKS/GKE/AKS style): parsed from the kubeconfig,
run non-interactively, token renewed before it expires and after a 401 - against the
real API server with a small plugin script."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from exporter import kubetoken
from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import Transient, Unauthorized
from exporter.kubesettings import ExecPlugin, from_kubeconfig
from exporter.kubetoken import CredentialError, run_exec_plugin
from tests.controlplane.cluster import ControlPlane


def _credential(token: str, expiry: str | None = None, **extra: str) -> str:
    status: dict[str, str] = {"token": token, **extra} if token else dict(extra)
    if expiry:
        status["expirationTimestamp"] = expiry
    return json.dumps(
        {
            "apiVersion": "client.authentication.k8s.io/v1",
            "kind": "ExecCredential",
            "status": status,
        }
    )


def _printing(tmp_path: Path, text: str) -> ExecPlugin:
    """A plugin that prints ``text`` (run by the library through the bounded wrapper)."""
    script = tmp_path / "print.py"
    script.write_text(f"import sys; sys.stdout.write({text!r})")
    return ExecPlugin(sys.executable, (str(script),))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(_credential("t"), ("t", None), id="no-expiry"),
        pytest.param(_credential("t", "2030-01-01T00:00:00Z"), ("t", 1893456000.0), id="expiry"),
    ],
)
def test_exec_credential_read_by_the_library(
    tmp_path: Path, text: str, expected: tuple[str, float | None]
) -> None:
    assert run_exec_plugin(_printing(tmp_path, text)) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("nope", "failed to decode process output", id="not-json"),
        pytest.param("{}", "missing key 'apiVersion'", id="no-api-version"),
        pytest.param(
            _credential("", clientCertificateData="x", clientKeyData="y"),
            "the credential carries a client certificate; only tokens are supported",
            id="cert",
        ),
        pytest.param(_credential("t", "tomorrow"), "'tomorrow' is not RFC 3339", id="bad-expiry"),
    ],
)
def test_unusable_exec_credentials_are_named(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(CredentialError, match=message) as err:
        run_exec_plugin(_printing(tmp_path, text))
    assert str(err.value).startswith(f"exec plugin {sys.executable}: ")
    assert "\n" not in str(err.value)


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
    assert config.exec_plugin.cwd == tmp_path  # as kubectl: the kubeconfig's directory
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
        "aws",
        ("eks", "get-token"),
        (("AWS_PROFILE", "dev"),),
        "client.authentication.k8s.io/v1",
        cwd=tmp_path,
    )


def _script(tmp_path: Path, code: str) -> ExecPlugin:
    script = tmp_path / "plugin.py"
    script.write_text(code)
    return ExecPlugin(sys.executable, (str(script),), cwd=tmp_path)


def _process_gone(pid_file: Path) -> bool:
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_a_plugin_printing_without_end_is_stopped_at_the_bound(tmp_path: Path) -> None:
    """3 GB would be MemoryError in the library's reader: the wrapper stops the plugin
    after 1 MiB, and the process reading it never holds more."""
    plugin = _script(
        tmp_path,
        "import os, pathlib, sys\n"
        "pathlib.Path('pid').write_text(str(os.getpid()))\n"
        "block = b'x' * 65536\n"
        "for _ in range(3 * 1024 * 1024 * 1024 // 65536):\n"
        "    sys.stdout.buffer.write(block)\n",
    )
    with pytest.raises(CredentialError, match=r"printed more than 1048576 bytes; stopped"):
        run_exec_plugin(plugin)
    assert _process_gone(tmp_path / "pid")


def test_a_hanging_plugin_is_stopped_after_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kubetoken, "EXEC_TIMEOUT_S", 1.0)
    plugin = _script(
        tmp_path,
        "import os, pathlib, time\npathlib.Path('pid').write_text(str(os.getpid()))\n"
        "time.sleep(600)\n",
    )
    with pytest.raises(CredentialError, match=r"did not finish within 1 s; stopped"):
        run_exec_plugin(plugin)
    assert _process_gone(tmp_path / "pid")


def test_binary_garbage_is_refused_in_one_line(tmp_path: Path) -> None:
    plugin = _script(tmp_path, "import sys; sys.stdout.buffer.write(b'\\xff\\xfe\\x00garbage')")
    with pytest.raises(CredentialError, match="printed something that is not UTF-8 text") as err:
        run_exec_plugin(plugin)
    assert "\n" not in str(err.value)


def test_a_missing_plugin_is_named(tmp_path: Path) -> None:
    with pytest.raises(CredentialError, match="exec plugin no-such-plugin: cannot run it"):
        run_exec_plugin(ExecPlugin("no-such-plugin"))


def test_a_failed_plugin_is_not_run_again_at_once(
    tmp_path: Path, control_plane: ControlPlane
) -> None:
    """A client retrying its requests must not start one plugin per request."""
    script = (
        "import pathlib, sys\nruns = pathlib.Path('runs')\n"
        "runs.write_text(str(int(runs.read_text()) + 1 if runs.exists() else 1))\n"
        "sys.exit(1)\n"
    )
    now = [0.0]
    kube = KubeClient(
        from_kubeconfig(_plugin_kubeconfig(tmp_path, control_plane, script)),
        clock=lambda: now[0],
    )
    for _ in range(3):
        with pytest.raises(Transient, match="exited 1"):
            kube.get(path("api", "v1", "namespaces", "default"))
    assert (tmp_path / "runs").read_text() == "1"
    now[0] += kubetoken.EXEC_FAILURE_HOLD_S
    with pytest.raises(Transient, match="exited 1"):
        kube.get(path("api", "v1", "namespaces", "default"))
    assert (tmp_path / "runs").read_text() == "2"
    kube.close()
