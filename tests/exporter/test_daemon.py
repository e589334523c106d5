"""The assembled daemon (watch loop, reconcile loop, HTTP server) against the real API
server and a fake podresources server, including the faults it must ride out: socket
absent at start, kubelet restart, a call exceeding its deadline, API server unreachable,
API server slow (a latency proxy: a long pass keeps the liveness probe green) and a
reconcile loop that is stuck (the liveness probe fails).

In every fault test the exporter recovers by itself, metrics and /readyz say what
happened, and each pod is written exactly once (a wrong value would need a second,
correcting write).
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from kubernetes import client

from exporter.annotations import OBSERVED_MEMORY_GROUPS, OBSERVED_PLACEMENT
from exporter.daemon import Exporter, Options
from exporter.kubeclient import KubeClient
from exporter.kubesettings import from_kubeconfig
from exporter.resources import PodResources
from exporter.writepool import DEFAULT_WRITE_CONCURRENCY
from tests.controlplane.cluster import ControlPlane
from tests.exporter import scenarios as s
from tests.exporter.fake_podresources import FakePodResources
from tests.exporter.kube_helpers import (
    annotations_of,
    create_pod,
    merge_patch,
    set_phase,
    wait_until,
)
from tests.exporter.tcp_proxy import TcpProxy

pytestmark = pytest.mark.controlplane

CPU_ONLY = {
    OBSERVED_PLACEMENT: '[{"zone":"node-0","amount":{"cpu":"4"}}]',
    OBSERVED_MEMORY_GROUPS: "[]",
}
GPU_AND_CPU = {
    OBSERVED_PLACEMENT: '[{"zone":"node-1","amount":{"cpu":"2","nvidia.com/gpu":"2"}}]',
    OBSERVED_MEMORY_GROUPS: "[]",
}


@dataclass
class Daemon:
    api: client.ApiClient
    namespace: str
    node: str
    fake: FakePodResources
    proxy: TcpProxy
    exporter: Exporter

    def report(self, template: PodResources) -> PodResources:
        return replace(template, namespace=self.namespace)

    def metric(self, name: str, **labels: str) -> float:
        return self.exporter.registry.get_sample_value(name, labels) or 0.0

    def wait_passes(self, n: int) -> None:
        target = self.metric("numa_exporter_reconcile_duration_seconds_count") + n
        wait_until(
            lambda: self.metric("numa_exporter_reconcile_duration_seconds_count") >= target,
            what=f"{n} reconcile passes",
        )

    def applied(self, expected: int) -> None:
        """Exactly ``expected`` patches applied (counted as each write ends, in its
        worker: a moment after the API server, and so the test, can see it)."""

        def applied() -> float:
            return self.metric("numa_exporter_annotation_patches_total", result="applied")

        wait_until(lambda: applied() >= expected, what=f"{expected} patches counted")
        assert applied() == expected

    def readyz(self) -> tuple[int, str]:
        return self.probe("/readyz")

    def probe(self, path: str) -> tuple[int, str]:
        url = f"http://127.0.0.1:{self.exporter.http.port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return resp.status, resp.read().decode().strip()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode().strip()

    def annotated(self, name: str, expected: dict[str, str]) -> Callable[[], bool]:
        return lambda: annotations_of(self.api, self.namespace, name) == expected


def _kubeconfig(cp: ControlPlane, port: int, path: Path) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        "clusters:\n- name: c\n  cluster:\n"
        f"    server: https://127.0.0.1:{port}\n    certificate-authority: {cp.ca_file}\n"
        f"users:\n- name: u\n  user:\n    token: {cp.admin_token}\n"
        "contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n"
    )
    return path


@pytest.fixture
def make_daemon(
    *,
    control_plane: ControlPlane,
    api_client: client.ApiClient,
    namespace: str,
    short_dir: Path,
    sysfs_root: Path,
    tmp_path: Path,
) -> Iterator[Callable[..., Daemon]]:
    started: list[Daemon] = []

    def make(
        *,
        start_kubelet: bool = True,
        rpc_timeout_s: float = 2.0,
        liveness_window_s: float | None = None,
        write_concurrency: int = DEFAULT_WRITE_CONCURRENCY,
    ) -> Daemon:
        fake = FakePodResources(short_dir / "kubelet.sock")
        if start_kubelet:
            fake.start()
        proxy = TcpProxy(control_plane.apiserver_port).start()
        kubeconfig = _kubeconfig(control_plane, proxy.port, tmp_path / "kubeconfig")
        options = Options(
            node_name=f"node-{uuid.uuid4().hex[:8]}",
            podresources_socket=fake.socket_path,
            sysfs_root=sysfs_root,
            poll_interval_s=0.2,
            metrics_bind_address="127.0.0.1:0",
            rpc_timeout_s=rpc_timeout_s,
            liveness_window_s=liveness_window_s,
            write_concurrency=write_concurrency,
        )
        exporter = Exporter(options, KubeClient(from_kubeconfig(kubeconfig)))
        daemon = Daemon(api_client, namespace, options.node_name, fake, proxy, exporter)
        started.append(daemon)
        exporter.start()
        return daemon

    yield make
    for d in started:
        d.fake.release.set()
        d.exporter.stop()
        d.fake.stop()
        d.proxy.stop()


def test_pod_events_drift_and_steady_state(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    d.fake.set_pods([d.report(s.CPU_ONLY), d.report(s.GPU_AND_CPU)])
    create_pod(d.api, d.namespace, "cpu-only", node=d.node)
    wait_until(d.annotated("cpu-only", CPU_ONLY), what="cpu-only annotated")

    # a pod the kubelet has not acknowledged yet is left alone until it is
    create_pod(d.api, d.namespace, "gpu-cpu", node=d.node, phase="Pending", started=False)
    d.wait_passes(3)
    assert annotations_of(d.api, d.namespace, "gpu-cpu") == {}
    set_phase(d.api, d.namespace, "gpu-cpu", "Running")
    wait_until(d.annotated("gpu-cpu", GPU_AND_CPU), what="gpu-cpu annotated")

    # out-of-band removal is repaired from the watch
    removal = {"metadata": {"annotations": {OBSERVED_PLACEMENT: None}}}
    merge_patch(d.api, d.namespace, "cpu-only", removal)
    wait_until(d.annotated("cpu-only", CPU_ONLY), what="drift repaired")
    d.applied(3)

    # steady state: passes keep running, nothing is written
    d.wait_passes(10)
    d.applied(3)
    assert d.readyz() == (200, "ok")
    assert d.metric("numa_exporter_observation_lag_seconds_count") == 2
    assert d.metric("numa_exporter_last_successful_reconcile_timestamp_seconds") > 0


def test_stop_ends_the_open_watch(make_daemon: Callable[..., Daemon]) -> None:
    """A stopping exporter (SIGTERM) ends its pod watch itself instead of waiting for the
    API server to close it, minutes later: every thread has ended when stop returns."""
    d = make_daemon()
    d.fake.set_pods([d.report(s.CPU_ONLY)])
    create_pod(d.api, d.namespace, "cpu-only", node=d.node)
    wait_until(d.annotated("cpu-only", CPU_ONLY), what="cpu-only annotated")
    d.wait_passes(2)  # the watch the annotation came through is open
    d.exporter.stop(timeout_s=3.0)
    assert [t.name for t in d.exporter._threads if t.is_alive()] == []


def test_socket_absent_at_start(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon(start_kubelet=False)
    create_pod(d.api, d.namespace, "cpu-only", node=d.node)
    wait_until(
        lambda: (
            d.metric(
                "numa_exporter_podresources_rpc_errors_total", method="List", code="UNAVAILABLE"
            )
            >= 3
        ),
        what="List failures",
    )
    assert d.readyz() == (503, "not reached in the last 3 passes: kubelet podresources")
    assert annotations_of(d.api, d.namespace, "cpu-only") == {}

    d.fake.set_pods([d.report(s.CPU_ONLY)])
    d.fake.start()
    wait_until(d.annotated("cpu-only", CPU_ONLY), what="annotated after the socket appeared")
    wait_until(lambda: d.readyz() == (200, "ok"), what="ready")
    assert d.metric("numa_exporter_podresources_up") == 1
    d.applied(1)


def test_kubelet_restart_mid_run(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    d.fake.set_pods([d.report(s.CPU_ONLY)])
    create_pod(d.api, d.namespace, "cpu-only", node=d.node)
    wait_until(d.annotated("cpu-only", CPU_ONLY), what="annotated")
    wait_until(lambda: d.readyz() == (200, "ok"), what="ready")
    allocatable_calls = d.fake.calls["GetAllocatableResources"]

    d.fake.stop()
    wait_until(
        lambda: d.readyz() == (503, "not reached in the last 3 passes: kubelet podresources"),
        what="not ready while the kubelet is down",
    )
    assert d.metric("numa_exporter_podresources_up") == 0
    create_pod(d.api, d.namespace, "gpu-cpu", node=d.node)
    d.fake.set_pods([d.report(s.CPU_ONLY), d.report(s.GPU_AND_CPU)])
    d.fake.start()  # a new socket, like a restarted kubelet

    wait_until(d.annotated("gpu-cpu", GPU_AND_CPU), what="annotated after the restart")
    wait_until(lambda: d.readyz() == (200, "ok"), what="ready again")
    assert d.fake.calls["GetAllocatableResources"] > allocatable_calls  # re-read after restart
    assert annotations_of(d.api, d.namespace, "cpu-only") == CPU_ONLY
    d.applied(2)


def test_call_exceeding_its_deadline(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon(rpc_timeout_s=0.3)
    create_pod(d.api, d.namespace, "cpu-only", node=d.node)
    d.fake.delay_s = 30.0
    d.fake.set_pods([d.report(s.CPU_ONLY)])
    wait_until(
        lambda: (
            d.metric(
                "numa_exporter_podresources_rpc_errors_total",
                method="List",
                code="DEADLINE_EXCEEDED",
            )
            >= 3
        ),
        what="List deadline errors",
    )
    wait_until(
        lambda: d.readyz() == (503, "not reached in the last 3 passes: kubelet podresources"),
        what="not ready",
    )
    assert annotations_of(d.api, d.namespace, "cpu-only") == {}

    d.fake.delay_s = 0.0
    d.fake.release.set()
    wait_until(d.annotated("cpu-only", CPU_ONLY), what="annotated once calls are fast again")
    wait_until(lambda: d.readyz() == (200, "ok"), what="ready again")
    d.applied(1)


def test_api_server_unreachable_then_back(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    create_pod(d.api, d.namespace, "cpu-only", node=d.node)
    create_pod(d.api, d.namespace, "gpu-cpu", node=d.node)
    d.fake.set_pods([d.report(s.CPU_ONLY)])
    wait_until(d.annotated("cpu-only", CPU_ONLY), what="annotated")

    d.proxy.cut()
    wait_until(lambda: d.metric("numa_exporter_apiserver_up") == 0, what="watch broken")
    d.fake.set_pods([d.report(s.CPU_ONLY), d.report(s.GPU_AND_CPU)])  # needs a write now
    wait_until(
        lambda: d.metric("numa_exporter_annotation_patches_total", result="failed") >= 1,
        what="a failed patch",
    )
    wait_until(
        lambda: d.readyz() == (503, "not reached in the last 3 passes: API server"),
        what="not ready",
    )
    assert annotations_of(d.api, d.namespace, "gpu-cpu") == {}

    d.proxy.restore()
    wait_until(d.annotated("gpu-cpu", GPU_AND_CPU), what="annotated after the API is back")
    wait_until(lambda: d.readyz() == (200, "ok"), what="ready again")
    assert d.metric("numa_exporter_apiserver_up") == 1
    d.applied(2)


class ProbeWatcher:
    """Asks ``/healthz`` every 50 ms in a thread and keeps every answer."""

    def __init__(self, daemon: Daemon) -> None:
        self.answers: list[tuple[int, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(daemon,), daemon=True)
        self._thread.start()

    def _run(self, daemon: Daemon) -> None:
        while not self._stop.wait(0.05):
            self.answers.append(daemon.probe("/healthz"))

    def stop(self) -> list[tuple[int, str]]:
        self._stop.set()
        self._thread.join()
        return self.answers


SLOW_PODS = 24
API_LATENCY_S = 0.25
LIVENESS_WINDOW_S = 1.0


def test_a_pass_slowed_by_the_api_server_keeps_the_exporter_alive(
    make_daemon: Callable[..., Daemon],
) -> None:
    """The fault trial of issue 21 in small: every request to the API server is answered
    API_LATENCY_S later (a latency proxy in front of the real API server), so writing
    SLOW_PODS new pods one at a time lasts several liveness windows. /healthz answers 200
    all along - the loop is alive and making progress (it does not wait for the writes) -
    and every pod is written once. (tests/exporter/test_slow_api.py: 100 pods, 2 s, the
    default write concurrency.)"""
    d = make_daemon(liveness_window_s=LIVENESS_WINDOW_S, write_concurrency=1)
    names = [f"pod-{i:02d}" for i in range(SLOW_PODS)]
    for name in names:
        create_pod(d.api, d.namespace, name, node=d.node)
    d.wait_passes(2)  # the pods are in the exporter's cache; the kubelet lists none yet
    d.proxy.latency_s = API_LATENCY_S
    watcher = ProbeWatcher(d)
    started = time.monotonic()
    d.fake.set_pods([replace(d.report(s.CPU_ONLY), name=name) for name in names])
    try:
        for name in names:
            wait_until(d.annotated(name, CPU_ONLY), what=f"{name} annotated", timeout_s=60)
    finally:
        answers = watcher.stop()
    writing_s = time.monotonic() - started
    d.proxy.latency_s = 0.0
    # the precondition: the writes lasted more than twice the liveness window
    assert writing_s > 2 * LIVENESS_WINDOW_S, "the writes were fast: the test proves nothing"
    assert len(answers) > 20
    assert {a for a in answers if a != (200, "ok")} == set()
    d.applied(SLOW_PODS)


def test_a_stuck_loop_fails_the_liveness_probe(make_daemon: Callable[..., Daemon]) -> None:
    """A loop that makes no progress for the liveness window (here: blocked in a kubelet
    call whose deadline is far longer than the window) fails /healthz, naming how long,
    and passes it again once it moves."""
    d = make_daemon(liveness_window_s=LIVENESS_WINDOW_S, rpc_timeout_s=60.0)
    d.wait_passes(1)
    assert d.probe("/healthz") == (200, "ok")
    d.fake.delay_s = 60.0
    wait_until(lambda: d.probe("/healthz")[0] == 503, what="/healthz failing")
    status, reason = d.probe("/healthz")
    assert status == 503 and reason.startswith("the reconcile loop made no progress for ")
    d.fake.delay_s = 0.0
    d.fake.release.set()
    wait_until(lambda: d.probe("/healthz") == (200, "ok"), what="/healthz passing again")
