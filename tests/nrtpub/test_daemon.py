"""The publisher daemon against the suite's real kube-apiserver (NRT CRD installed): the
object appears, follows the node's pods after the configured lag (driven by an injected
clock, never wall time), is written only when what is visible changes, and bad input
leaves it alone while /readyz says why. Then the command as a real process."""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exporter.kubeclient import KubeClient
from exporter.kubeerrors import NotFound
from fakenrt.kubelet.node import NodeState
from fakenrt.nrt.loaded import node_allocations
from fakenrt.nrtpub.daemon import MANAGED_BY, Publisher, PublisherOptions
from fakenrt.podspec import PodSpec
from fakenrt.profiles.model import NodeProfile
from tests.controller.conftest import ManualClock, make_profiles, two_numa_profile, unique
from tests.controller.harness import get_nrt, wait_for
from tests.controller.test_command import free_port
from tests.controlplane.cluster import ControlPlane
from tests.nrtpub.realnode_files import ServedNode, served_node
from tests.nrtpub.test_differential import expected_view, guaranteed

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures("nrt_crd")]
REPO = Path(__file__).resolve().parents[2]


def _profile() -> NodeProfile:
    raw = two_numa_profile(unique("real"))
    raw["kubelet"]["reservedSystemCPUs"] = "0"
    (profile,) = make_profiles(raw)
    return profile


@pytest.fixture
def node() -> Iterator[tuple[NodeProfile, ServedNode]]:
    profile = _profile()
    with served_node(profile) as served:
        yield profile, served


def _options(profile: NodeProfile, served: ServedNode, **extra: Any) -> PublisherOptions:
    return PublisherOptions(
        node=profile.name,
        podresources_socket=served.socket,
        sysfs_root=served.sysfs_root,
        kubelet_config=served.kubelet_config,
        **extra,
    )


def _visible(kube: KubeClient, name: str) -> dict[str, Any]:
    """The stored object without server-set metadata, comparable with render output."""
    stored = get_nrt(kube, name)
    return {k: v for k, v in stored.items() if k != "metadata"} | {"metadata": {"name": name}}


def _admit(state: NodeState, served: ServedNode, pod: PodSpec) -> None:
    assert state.admit(dataclasses.replace(pod, node_name=state.profile.name)).admit
    served.serve(node_allocations(state))


def test_changes_become_visible_after_the_lag_coalesced_and_in_order(
    kube: KubeClient, node: tuple[NodeProfile, ServedNode], clock: ManualClock
) -> None:
    profile, served = node
    state = NodeState.from_profile(profile)
    publisher = Publisher(
        _options(profile, served, delay_s=5.0, jitter_s=2.0, seed=3), kube, clock=clock
    )
    try:
        publisher.step()  # start-up: published at once
        start = expected_view(state)
        assert _visible(kube, profile.name) == start
        assert get_nrt(kube, profile.name)["metadata"]["labels"] == MANAGED_BY
        assert publisher.writer.writes == 1

        _admit(state, served, guaranteed("a", 2, "1Gi"))
        after_a = expected_view(state)
        publisher.step()
        due_a = publisher.pipeline.next_due()
        assert due_a is not None and 5.0 <= due_a - clock.now <= 7.0
        clock.advance(due_a - clock.now - 0.001)
        publisher.step()  # not yet
        assert _visible(kube, profile.name) == start
        clock.advance(0.001)
        publisher.step()
        assert _visible(kube, profile.name) == after_a
        assert publisher.writer.writes == 2

        # Two changes one second apart: both due later, in order; one write shows the last.
        _admit(state, served, guaranteed("b", 1, "1Gi"))
        publisher.step()
        clock.advance(1.0)
        _admit(state, served, guaranteed("c", 1, "1Gi"))
        after_c = expected_view(state)
        publisher.step()
        assert len(publisher.pipeline) == 2
        clock.advance(10.0)
        publisher.step()
        assert _visible(kube, profile.name) == after_c
        assert publisher.writer.writes == 3

        # Nothing changes: no write, however often it polls.
        for _ in range(3):
            clock.advance(1.0)
            publisher.step()
        assert publisher.writer.writes == 3
        assert publisher.health.readiness() == (True, "ok")
    finally:
        publisher.close()


def test_a_change_undone_before_it_is_visible_writes_nothing(
    kube: KubeClient, node: tuple[NodeProfile, ServedNode], clock: ManualClock
) -> None:
    profile, served = node
    state = NodeState.from_profile(profile)
    publisher = Publisher(_options(profile, served, delay_s=5.0), kube, clock=clock)
    try:
        publisher.step()
        _admit(state, served, guaranteed("a", 2, "1Gi"))
        publisher.step()
        clock.advance(1.0)
        state.release("default/a")
        served.serve(node_allocations(state))
        publisher.step()
        clock.advance(10.0)
        publisher.step()
        assert publisher.writer.writes == 1
        assert _visible(kube, profile.name) == expected_view(state)
    finally:
        publisher.close()


def test_resync_repairs_a_deletion_and_leaves_an_unchanged_object_alone(
    kube: KubeClient, node: tuple[NodeProfile, ServedNode], clock: ManualClock
) -> None:
    from fakenrt.controller.writers import nrt_path

    profile, served = node
    publisher = Publisher(_options(profile, served, resync_interval_s=30.0), kube, clock=clock)
    try:
        publisher.step()
        version = get_nrt(kube, profile.name)["metadata"]["resourceVersion"]
        clock.advance(30.0)
        publisher.step()  # resync of an unchanged object: no new version
        assert get_nrt(kube, profile.name)["metadata"]["resourceVersion"] == version
        kube.delete(nrt_path(profile.name))
        clock.advance(10.0)
        publisher.step()  # not due yet
        with pytest.raises(NotFound):
            get_nrt(kube, profile.name)
        clock.advance(20.0)
        publisher.step()
        assert _visible(kube, profile.name) == expected_view(NodeState.from_profile(profile))
    finally:
        publisher.close()


def test_bad_input_keeps_the_object_and_is_not_ready(
    kube: KubeClient,
    node: tuple[NodeProfile, ServedNode],
    clock: ManualClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    profile, served = node
    publisher = Publisher(_options(profile, served), kube, clock=clock)
    try:
        publisher.step()
        good = served.kubelet_config.read_text()
        served.kubelet_config.write_text("cpuManagerPolicy: [not, a, policy]\n")
        for _ in range(3):
            clock.advance(1.0)
            publisher.step()
        ready, reason = publisher.health.readiness()
        assert not ready and "kubelet podresources" in reason
        assert f"last problem: {served.kubelet_config}: cpuManagerPolicy" in reason
        assert publisher.health.liveness()[0]
        errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
        assert len(errors) == 1  # one line, not one per poll
        assert str(served.kubelet_config) in errors[0] and "cpuManagerPolicy" in errors[0]
        assert publisher.writer.writes == 1
        served.kubelet_config.write_text(good)
        clock.advance(1.0)
        publisher.step()
        assert publisher.health.readiness() == (True, "ok")
    finally:
        publisher.close()


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_command_publishes_follows_pods_and_serves_health(
    kube: KubeClient, control_plane: ControlPlane, node: tuple[NodeProfile, ServedNode]
) -> None:
    profile, served = node
    state = NodeState.from_profile(profile)
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable, "-c", "from fakenrt.cli import main; main()", "nrt", "publish",
            "--podresources-socket", str(served.socket),
            "--sysfs-root", str(served.sysfs_root),
            "--kubelet-config", str(served.kubelet_config),
            "--kubeconfig", str(control_plane.kubeconfig),
            "--poll-interval", "200ms",
            "--health-bind-address", f"127.0.0.1:{port}",
        ],
        cwd=REPO,
        env={"NODE_NAME": profile.name, "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        start = expected_view(state)
        wait_for(lambda: _visible(kube, profile.name) == start, what="the node's NRT")
        _admit(state, served, guaranteed("a", 3, "2Gi"))
        loaded = expected_view(state)
        wait_for(lambda: _visible(kube, profile.name) == loaded, what="the NRT after a pod")
        wait_for(lambda: _get(f"http://127.0.0.1:{port}/readyz")[0] == 200, what="ready")
        assert _get(f"http://127.0.0.1:{port}/healthz") == (200, "ok\n")

        served.kubelet_config.write_text("kind: Pod\n")
        wait_for(lambda: _get(f"http://127.0.0.1:{port}/readyz")[0] == 503, what="not ready")
        assert "kind: expected KubeletConfiguration" in _get(f"http://127.0.0.1:{port}/readyz")[1]
        assert _get(f"http://127.0.0.1:{port}/healthz")[0] == 200
        assert _visible(kube, profile.name) == loaded
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, stderr = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            _, stderr = proc.communicate(timeout=30)
            pytest.fail(f"still running 30 s after SIGTERM; its threads:\n{stderr[-6000:]}")
    assert proc.returncode == 0, stderr[-3000:]
    assert f"{served.kubelet_config}: kind: expected KubeletConfiguration, got 'Pod'" in stderr
    assert f"node {profile.name}: stopping on SIGTERM" in stderr


def test_flag_errors_exit_non_zero_with_a_message() -> None:
    from click.testing import CliRunner

    from fakenrt.cli import main

    runner = CliRunner()
    cases = [
        ([], "--node is required"),
        (["--node", "n", "--poll-interval", "0"], "--poll-interval"),
        (["--node", "n", "--health-bind-address", "nope"], "--health-bind-address"),
        (["--node", "n", "--jitter", "soon"], "--jitter"),
    ]
    for args, message in cases:
        result = runner.invoke(main, ["nrt", "publish", *args], env={"NODE_NAME": ""})
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)


def test_a_health_address_in_use_is_a_usage_error(
    control_plane: ControlPlane, node: tuple[NodeProfile, ServedNode]
) -> None:
    import socket

    profile, _ = node
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [
                sys.executable, "-c", "from fakenrt.cli import main; main()", "nrt", "publish",
                "--node", profile.name, "--kubeconfig", str(control_plane.kubeconfig),
                "--health-bind-address", f"127.0.0.1:{port}",
            ],
            cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"--health-bind-address 127.0.0.1:{port}:" in proc.stderr


def test_the_interface_the_kind_side_uses_is_there() -> None:
    """The flags the Kind deployment relies on (extend, never rename)."""
    from fakenrt.commands.nrt import publish

    flags = {opt for p in publish.params for opt in getattr(p, "opts", [])}
    assert {
        "--node", "--podresources-socket", "--sysfs-root", "--kubelet-config", "--kubeconfig",
        "--delay", "--jitter", "--seed", "--poll-interval", "--health-bind-address",
    } <= flags  # fmt: skip
