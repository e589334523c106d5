"""``fakenrt scheduler run`` finds its cluster like ``fakenrt controller`` and survives an
API server it cannot reach: one clear line with ``--once``, backoff and one warning per
outage in the loop (issue 11, item 8). Against a real closed port and the real control
plane."""

from __future__ import annotations

import logging
import shutil
import socket
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner
from kubernetes import client
from prometheus_client import CollectorRegistry

from exporter.kubeclient import KubeClient
from exporter.kubeerrors import Transient
from exporter.kubesettings import from_kubeconfig
from fakenrt.cli import main
from fakenrt.nrt.render import NRT_GROUP, NRT_PLURAL, NRT_VERSION
from fakenrt.profiles.loading import EXAMPLES_DIR
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.cluster import ClusterSnapshot, PodSnapshot
from fakenrt.scheduler.kube import KubeCluster, watch_pods
from fakenrt.scheduler.loop import MAX_RETRY_WAIT_S, Scheduler
from fakenrt.scheduler.metrics import SchedulerMetrics
from fakenrt.scheduler.plugin import NumaPlugin
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.helpers import create_fake_node
from tests.scheduler.builders import nrt_object


def closed_port() -> int:
    """A local TCP port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def kubeconfig_to(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        f"clusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
    )
    return path


class CountingEvent(threading.Event):
    """An Event whose ``wait`` records the timeout and returns at once; after ``limit``
    waits it sets ``stop`` (so a loop under test runs a known number of rounds without
    sleeping); without ``stop`` it sets itself."""

    def __init__(self, limit: int, stop: threading.Event | None = None) -> None:
        super().__init__()
        self.stop = self if stop is None else stop
        self.limit = limit
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(float(timeout or 0))
        if len(self.waits) >= self.limit:
            self.stop.set()
        return self.is_set()


def scheduler_for(cluster: KubeCluster | FlakyCluster) -> Scheduler:
    return Scheduler(
        cluster=cluster,
        plugin=NumaPlugin(PluginArgs()),
        scheduler_name="numa-reference",
        metrics=SchedulerMetrics(CollectorRegistry()),
        clock=lambda: 0.0,
    )


def test_once_against_a_closed_port_is_one_line(tmp_path: Path) -> None:
    port = closed_port()
    config = kubeconfig_to(tmp_path, f"http://127.0.0.1:{port}")
    result = CliRunner().invoke(main, ["scheduler", "run", "--kubeconfig", str(config), "--once"])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        f"Error: scheduling cycle failed against http://127.0.0.1:{port}: list nodes: "
    )
    assert "Connection refused" in lines[0]


def test_the_loop_backs_off_and_warns_once_per_outage(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = from_kubeconfig(kubeconfig_to(tmp_path, f"http://127.0.0.1:{closed_port()}"))
    sched = scheduler_for(KubeCluster(KubeClient(config), scheduler_name="numa-reference"))
    stop = threading.Event()
    wake = CountingEvent(8, stop)
    with caplog.at_level(logging.DEBUG, logger="fakenrt.scheduler.loop"):
        sched.run(stop, period=1.0, wake=wake)
    assert wake.waits == [1, 2, 4, 8, 16, MAX_RETRY_WAIT_S, MAX_RETRY_WAIT_S, MAX_RETRY_WAIT_S]
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert "cycle failed: list nodes: " in warnings[0].getMessage()
    assert "retrying with backoff (up to 30s)" in warnings[0].getMessage()


class FlakyCluster:
    """A cluster whose first ``failures`` snapshots fail as an unreachable server does."""

    def __init__(self, failures: int) -> None:
        self.failures = failures

    def snapshot(self) -> ClusterSnapshot:
        if self.failures:
            self.failures -= 1
            raise Transient(0, "list nodes: connection refused")
        return ClusterSnapshot()

    def annotate(self, pod: PodSnapshot, annotations: Mapping[str, str]) -> None:
        raise AssertionError("no pod to annotate")

    def bind(self, pod: PodSnapshot, node: str) -> None:
        raise AssertionError("no pod to bind")

    def record_unschedulable(self, pod: PodSnapshot, message: str) -> None:
        raise AssertionError("no pod to record")


def test_recovery_resets_the_backoff_and_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    stop = threading.Event()
    wake = CountingEvent(6, stop)
    with caplog.at_level(logging.INFO, logger="fakenrt.scheduler.loop"):
        scheduler_for(FlakyCluster(failures=3)).run(stop, period=0.5, wake=wake)
    assert wake.waits == [0.5, 1.0, 2.0, 0.5, 0.5, 0.5]
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(messages) == 2
    assert messages[1] == "cycle succeeded after 3 failed cycles"


def test_the_pod_watch_backs_off_too(tmp_path: Path) -> None:
    config = from_kubeconfig(kubeconfig_to(tmp_path, f"http://127.0.0.1:{closed_port()}"))
    stop = CountingEvent(7)
    watch_pods(KubeClient(config), "numa-reference", threading.Event(), stop)
    assert stop.waits == [1, 2, 4, 8, 16, 30, 30]


@pytest.mark.controlplane
@pytest.mark.parametrize("where", ["KUBECONFIG", "home"])
def test_run_finds_the_cluster_like_the_controller(
    control_plane: ControlPlane, tmp_path: Path, where: str
) -> None:
    """No --kubeconfig: $KUBECONFIG, else ~/.kube/config (in-cluster when
    KUBERNETES_SERVICE_HOST is set, which it is not here)."""
    env: dict[str, str | None] = {"KUBERNETES_SERVICE_HOST": None}
    if where == "KUBECONFIG":
        env["KUBECONFIG"] = str(control_plane.kubeconfig)
    else:
        (tmp_path / ".kube").mkdir()
        shutil.copy(control_plane.kubeconfig, tmp_path / ".kube" / "config")
        env.update(KUBECONFIG=None, HOME=str(tmp_path))
    result = CliRunner(env=env).invoke(
        main, ["scheduler", "run", "--scheduler-name", "nobody-uses-this", "--once"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == ""


@pytest.mark.controlplane
def test_a_bad_nrt_is_logged_once_not_every_cycle(
    api_client: client.ApiClient,
    control_plane: ControlPlane,
    nrt_crd: list[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A 24-zone NRT is more than the plugin searches: the node is read without it, and
    the warning is logged once, not every cycle; after the NRT is fixed and broken again,
    once more."""
    name = f"wide-{uuid.uuid4().hex[:8]}"
    custom = client.CustomObjectsApi(api_client)
    create_fake_node(api_client, name, labels={"numa-test": name}, capacity={"cpu": "48"})
    wide = nrt_object(name, [{"capacity": {"cpu": 2}}] * 24)
    custom.create_cluster_custom_object(NRT_GROUP, NRT_VERSION, NRT_PLURAL, wide)
    cluster = KubeCluster(
        KubeClient(from_kubeconfig(control_plane.kubeconfig)),
        scheduler_name="numa-reference",
        node_selector=f"numa-test={name}",
    )
    try:
        with caplog.at_level(logging.WARNING, logger="fakenrt.scheduler.kube"):
            for _ in range(3):
                (node,) = cluster.snapshot().nodes
                assert node.nrt is None
            assert len(caplog.records) == 1
            assert f"ignoring NRT of node {name}: " in caplog.records[0].getMessage()
            assert "24 NUMA zones; the plugin reads at most 16" in caplog.records[0].getMessage()
            custom.delete_cluster_custom_object(NRT_GROUP, NRT_VERSION, NRT_PLURAL, name)
            (node,) = cluster.snapshot().nodes
            custom.create_cluster_custom_object(NRT_GROUP, NRT_VERSION, NRT_PLURAL, wide)
            cluster.snapshot()
            assert len(caplog.records) == 2
    finally:
        custom.delete_cluster_custom_object(NRT_GROUP, NRT_VERSION, NRT_PLURAL, name)
        client.CoreV1Api(api_client).delete_node(name)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param(None, "kubeconfig: /dev/zero is not a regular file", id="dev-zero"),
        pytest.param(b"\x7fELF\0\0\0", "is not a text file (it contains NUL bytes)", id="binary"),
        pytest.param(
            b"a: \xff\xfe\n", "is not UTF-8 text (invalid byte at offset 3)", id="not-utf8"
        ),
        pytest.param(b"a: [\n", "not a YAML kubeconfig (while parsing a flow node", id="yaml"),
        pytest.param(b"#" * (5 << 20), "is larger than 4 MiB, the most read", id="huge"),
    ],
)
@pytest.mark.parametrize("command", [["scheduler", "run"], ["controller"]])
def test_an_unusable_kubeconfig_is_one_line(
    tmp_path: Path, content: bytes | None, problem: str, command: list[str]
) -> None:
    path = Path("/dev/zero")
    if content is not None:
        path = tmp_path / "kubeconfig"
        path.write_bytes(content)
    _refused_in_one_line(command, path, problem)


def _refused_in_one_line(command: list[str], kubeconfig: Path, problem: str) -> None:
    extra = ["--profile", str(EXAMPLES_DIR / "dgx.yaml")] if command == ["controller"] else []
    result = CliRunner().invoke(main, [*command, "--kubeconfig", str(kubeconfig), *extra])
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: cannot load a Kubernetes configuration: ")
    assert problem in lines[0]


def _kubeconfig_with_user(tmp_path: Path, user: str, cluster: str = "") -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:1'{cluster}}}}}]\n"
        f"users: [{{name: u, user: {user}}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
    )
    return path


@pytest.mark.parametrize(
    ("user", "cluster", "problem"),
    [
        pytest.param(
            "{tokenFile: /dev/zero}", "",
            "users['u'].tokenFile: /dev/zero is not a regular file", id="token-file-dev-zero",
        ),
        pytest.param(
            "{tokenFile: big}", "",
            "users['u'].tokenFile: {dir}/big is larger than 4 MiB", id="token-file-huge",
        ),
        pytest.param(
            "{token: t}", ", certificate-authority: big",
            "clusters['c'].certificate-authority: {dir}/big is larger than 4 MiB", id="ca-huge",
        ),
        pytest.param(
            "{token: t}", ", certificate-authority: garbage",
            "cannot load the TLS certificates", id="ca-garbage",
        ),
        pytest.param(
            "{client-certificate: big, client-key: garbage}", "",
            "users['u'].client-certificate: {dir}/big is larger than 4 MiB", id="cert-huge",
        ),
        pytest.param(
            "{exec: {command: python3, args: [-c, 'while 1: print(8 * 65536 * \"x\")']}}", "",
            "exec plugin python3: printed more than 1048576 bytes; stopped", id="exec-endless",
        ),
        pytest.param(
            "{exec: {command: python3, args: [-c, 'print(\"garbage\")']}}", "",
            "exec plugin python3: exec: failed to decode process output", id="exec-garbage",
        ),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", [["scheduler", "run"], ["controller"]])
def test_an_unusable_credential_file_or_plugin_is_one_line(
    tmp_path: Path, user: str, cluster: str, problem: str, command: list[str]
) -> None:
    """tokenFile: /dev/zero or a plugin printing without end grew the process to
    MemoryError; now each is refused at start, in one line naming the field or plugin."""
    with open(tmp_path / "big", "wb") as big:
        big.truncate(5 << 20)  # sparse: 5 MiB that cost no disk
    (tmp_path / "garbage").write_text("not a certificate\n")
    path = _kubeconfig_with_user(tmp_path, user, cluster)
    _refused_in_one_line(command, path, problem.format(dir=tmp_path))
