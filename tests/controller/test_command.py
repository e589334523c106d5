"""``fakenrt controller``: options documented, bad input refused clearly, the daemon runs
as a process, stops on SIGTERM and removes its own nodes on request."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import NotFound
from fakenrt.cli import main
from fakenrt.controller.nodeobjects import NodeIdentity
from fakenrt.controller.registration import register_nodes
from tests.controller.conftest import make_profiles, two_numa_profile, unique
from tests.controller.harness import get_nrt, wait_for
from tests.controlplane.cluster import ControlPlane

REPO = Path(__file__).resolve().parents[2]
OPTIONS = (
    "--kubeconfig", "--profile", "--state-dir", "--controller-name", "--seed", "--nrt-delay",
    "--nrt-jitter", "--nrt-refresh", "--start-delay", "--default-run-duration", "--taint",
    "--no-taint", "--lease-duration", "--lease-renew-interval", "--node-status-interval",
    "--workers", "--remove-nodes", "--remove-on-exit", "--metrics-bind-address", "--log-level",
)  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_help_documents_every_option() -> None:
    result = CliRunner().invoke(main, ["controller", "--help"])
    assert result.exit_code == 0
    for option in OPTIONS:
        assert option in result.output, option


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--nrt-delay", "soon"], "not a duration", id="bad-duration"),
        pytest.param(["--workers", "0"], "0 is not in the range", id="bad-workers"),
    ],
)
def test_bad_options_are_refused(tmp_path: Path, args: list[str], message: str) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(yaml.safe_dump({"nodes": [two_numa_profile("n")]}))
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    result = CliRunner().invoke(
        main, ["controller", "--kubeconfig", str(kubeconfig), "--profile", str(profile), *args]
    )
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.controlplane
def test_invalid_profile_names_the_file_node_and_field(
    tmp_path: Path, control_plane: ControlPlane
) -> None:
    profile = tmp_path / "broken.yaml"
    broken = two_numa_profile("n1")
    broken["kubelet"] = {"topologyManagerPolicy": "sometimes"}
    profile.write_text(yaml.safe_dump({"nodes": [broken]}))
    result = CliRunner().invoke(
        main,
        ["controller", "--kubeconfig", str(control_plane.kubeconfig), "--profile", str(profile)],
    )
    assert result.exit_code == 1
    assert "broken.yaml" in result.output and "n1" in result.output
    assert "topologyManagerPolicy" in result.output


@pytest.mark.controlplane
@pytest.mark.usefixtures("nrt_crd")
def test_a_state_dir_too_long_for_unix_sockets_is_a_clear_error(
    tmp_path: Path, control_plane: ControlPlane
) -> None:
    name = unique("fake")
    profile = tmp_path / "p.yaml"
    profile.write_text(yaml.safe_dump({"nodes": [two_numa_profile(name)]}))
    state = tmp_path / ("d" * 110)
    result = CliRunner().invoke(
        main,
        [
            "controller",
            "--kubeconfig", str(control_plane.kubeconfig),
            "--profile", str(profile),
            "--controller-name", unique("ctl"),
            "--state-dir", str(state),
        ],
    )  # fmt: skip
    assert result.exit_code == 1
    assert "cannot start the controller" in result.output and "107 bytes" in result.output


@pytest.mark.controlplane
def test_remove_nodes_removes_only_this_controllers_nodes(
    kube: KubeClient, control_plane: ControlPlane
) -> None:
    mine, other = unique("ctl"), unique("ctl")
    (a,) = make_profiles(two_numa_profile(unique("fake")))
    (b,) = make_profiles(two_numa_profile(unique("fake")))
    register_nodes(kube, [(a, NodeIdentity(a.name, 0))], controller=mine, taint=True, now=0)
    register_nodes(kube, [(b, NodeIdentity(b.name, 0))], controller=other, taint=True, now=0)
    result = CliRunner().invoke(
        main,
        [
            "controller",
            "--kubeconfig", str(control_plane.kubeconfig),
            "--controller-name", mine,
            "--remove-nodes",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"removed 1 node(s): {a.name}" in result.output
    with pytest.raises(NotFound):
        kube.get(path("api", "v1", "nodes", a.name))
    kube.get(path("api", "v1", "nodes", b.name))


@pytest.mark.controlplane
@pytest.mark.usefixtures("nrt_crd")
def test_daemon_serves_until_sigterm_then_removes_its_nodes(
    kube: KubeClient, control_plane: ControlPlane, tmp_path: Path
) -> None:
    name, controller, port = unique("fake"), unique("ctl"), free_port()
    profile = tmp_path / "p.yaml"
    profile.write_text(yaml.safe_dump({"nodes": [two_numa_profile(name)]}))
    proc = subprocess.Popen(
        [
            sys.executable, "-c", "from fakenrt.cli import main; main()", "controller",
            "--kubeconfig", str(control_plane.kubeconfig),
            "--profile", str(profile),
            "--controller-name", controller,
            "--state-dir", str(tmp_path / "state"),
            "--remove-on-exit",
            "--metrics-bind-address", f"127.0.0.1:{port}",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: get_nrt(kube, name), what="NRT of the daemon's node")
        assert (tmp_path / "state" / name / "kubelet.sock").is_socket()
        assert (tmp_path / "state" / name / "sys/devices/system/node/node1/cpulist").read_text()
        url = f"http://127.0.0.1:{port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            metrics = response.read().decode()
        assert "fakenrt_controller_nodes 1.0" in metrics
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr[-3000:]
    assert "removed 1 node(s)" in stderr
    with pytest.raises(NotFound):
        kube.get(path("api", "v1", "nodes", name))


def test_a_kubeconfig_without_a_cluster_is_a_clear_error(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(yaml.safe_dump({"nodes": [two_numa_profile("n")]}))
    empty = tmp_path / "kubeconfig"
    empty.write_text("apiVersion: v1\nkind: Config\n")
    result = CliRunner().invoke(
        main, ["controller", "--kubeconfig", str(empty), "--profile", str(profile)]
    )
    assert result.exit_code == 1
    assert "cannot load a Kubernetes configuration" in result.stderr
    assert str(empty) in result.stderr, result.stderr
