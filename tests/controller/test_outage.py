"""An API server outage (connections cut through a TCP proxy): the controller keeps
running, retries its writes with backoff, resumes its watch, and catches up afterwards."""

from __future__ import annotations

import pytest

from exporter.kubeclient import KubeClient
from fakenrt.controller.writers import lease_path
from tests.controller.conftest import (
    ManualClock,
    admin_kube,
    make_profiles,
    two_numa_profile,
    unique,
)
from tests.controller.harness import create_pod, phase_of, running, wait_for
from tests.controller.podmanifests import pod
from tests.controlplane.cluster import ControlPlane
from tests.exporter.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures("nrt_crd")]


def test_survives_an_api_outage_and_catches_up(
    kube: KubeClient, control_plane: ControlPlane, namespace: str
) -> None:
    proxy = TcpProxy(control_plane.apiserver_port).start()
    via_proxy = admin_kube(f"https://127.0.0.1:{proxy.port}", control_plane, timeout_s=5)
    clock = ManualClock()
    (profile,) = make_profiles(two_numa_profile(unique("fake")))
    node = profile.name
    try:
        with running(via_proxy, [profile], clock=clock, lease_renew_interval=10.0) as ctl:
            assert ctl.executor is not None
            executor = ctl.executor
            renewed = wait_for(lambda: kube.get(lease_path(node)), what="lease")["spec"][
                "renewTime"
            ]
            proxy.cut()
            clock.advance(11)  # lease renewals come due while the API server is unreachable
            ctl.wake()
            wait_for(lambda: executor.counts().get("RenewLease:retry"), what="a retry")
            create_pod(kube, pod("during", node, namespace=namespace, cpu="1"))
            proxy.restore()
            wait_for(phase_of(kube, namespace, "during", "Running"), timeout=60, what="caught up")
            wait_for(
                lambda: kube.get(lease_path(node))["spec"]["renewTime"] != renewed,
                timeout=60,
                what="lease renewed after the outage",
            )
    finally:
        proxy.stop()
