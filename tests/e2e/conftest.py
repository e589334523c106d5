"""Fixtures of the end-to-end scenarios: the scheduler(s) under test and a deployment
factory (processes on the suite's control plane)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from exporter.kubeclient import KubeClient, path
from tests.controller.conftest import admin_kube
from tests.controlplane.cluster import ControlPlane
from tests.e2e.cluster import unique
from tests.e2e.deployment import Deployment, ProcessDeployment, Topology
from tests.e2e.schedulers import RECONSTRUCTION, REFERENCE_MODES, SchedulerUnderTest, from_options

DeployFn = Callable[[Topology], Deployment]
#: (topology, scheduler under test, controller name) -> a deployment not started yet
BackendFn = Callable[[Topology, SchedulerUnderTest, str], Deployment]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``scheduler``: the user's scheduler when given; otherwise the reference scheduler's
    default mode, or every mode for tests marked ``every_reference_mode``."""
    if "scheduler" not in metafunc.fixturenames:
        return
    custom = from_options(
        name=metafunc.config.getoption("--scheduler-name"),
        command=metafunc.config.getoption("--scheduler-command"),
        reason=metafunc.config.getoption("--scheduler-reason"),
    )
    if custom is not None:
        chosen: tuple[SchedulerUnderTest, ...] = (custom,)
    elif metafunc.definition.get_closest_marker("every_reference_mode"):
        chosen = REFERENCE_MODES
    else:
        chosen = (RECONSTRUCTION,)
    metafunc.parametrize("scheduler", chosen, ids=[s.id for s in chosen])


@pytest.fixture
def kube(control_plane: ControlPlane) -> KubeClient:
    return admin_kube(control_plane.server, control_plane)


@pytest.fixture
def backend(kube: KubeClient, control_plane: ControlPlane, nrt_crd: list[str]) -> BackendFn:
    """How a deployment is made: every component a local process on the suite's control
    plane. (An in-cluster backend overrides this fixture.)"""

    def make(topology: Topology, scheduler: SchedulerUnderTest, controller_name: str) -> Deployment:
        return ProcessDeployment(
            kube=kube,
            kubeconfig=control_plane.kubeconfig,
            topology=topology,
            scheduler=scheduler,
            controller_name=controller_name,
        )

    return make


@pytest.fixture
def deploy(
    kube: KubeClient, backend: BackendFn, scheduler: SchedulerUnderTest, namespace: str
) -> Iterator[DeployFn]:
    """Start a deployment of the given topology with the scheduler under test. After the
    test the pods of ``namespace`` are deleted at once (the control plane runs no namespace
    controller, and a Pending pod left behind would be the next scenario's), then the
    deployment is stopped and its nodes removed."""
    started: list[Deployment] = []

    def start(topology: Topology) -> Deployment:
        deployment = backend(topology, scheduler, unique("e2e"))
        started.append(deployment)
        deployment.start()
        return deployment

    yield start
    kube.request(
        "DELETE",
        path("api", "v1", "namespaces", namespace, "pods"),
        what="delete the scenario's pods",
        query={"gracePeriodSeconds": "0"},
    )
    for deployment in reversed(started):
        deployment.stop()
