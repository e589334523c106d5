"""Fixtures of the end-to-end scenarios: the scheduler(s) under test and a deployment
factory - processes on the suite's control plane, with ``--kind`` the manifests
deployed in the session's Kind cluster (tests/e2e/kind_deployment.py), or with ``--kind
--real-kubelet`` real kubelets in a Kind cluster of their own
(tests/e2e/realnode_deployment.py)."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Generator, Iterator

import pytest

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import Conflict, NotFound
from exporter.kubesettings import from_kubeconfig
from tests.controller.conftest import admin_kube
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.helpers import ensure_namespace
from tests.e2e.cluster import unique
from tests.e2e.deployment import Deployment, ProcessDeployment, Topology
from tests.e2e.kind_deployment import KindDeployment, install_crds
from tests.e2e.realnode_deployment import RealKubeletDeployment, RealNodeCluster
from tests.e2e.schedulers import RECONSTRUCTION, REFERENCE_MODES, SchedulerUnderTest, from_options
from tests.kind.cluster import KindCluster, _lib_value

DeployFn = Callable[[Topology], Deployment]
#: (topology, scheduler under test, controller name) -> a deployment not started yet
BackendFn = Callable[[Topology, SchedulerUnderTest, str], Deployment]
#: Per test on Kind (the first one also brings the cluster up).
KIND_TIMEOUT_S = 900


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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On Kind, a scenario may take longer than the suite's default timeout."""
    if not config.getoption("--kind"):
        return
    for item in items:
        if "backend" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(KIND_TIMEOUT_S))


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--real-kubelet") and not config.getoption("--kind"):
        raise pytest.UsageError("--real-kubelet needs --kind (the real kubelets run in Kind)")


def _on_kind(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--kind"))


def _real_kubelets(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--real-kubelet"))


@pytest.fixture(scope="session")
def kind_e2e(kind: KindCluster) -> KindCluster:
    """The session's Kind cluster with the NRT CRD installed."""
    install_crds(kind)
    return kind


@pytest.fixture
def kube(request: pytest.FixtureRequest) -> KubeClient:
    """An admin client of where the scenarios run: the suite's control plane, or Kind."""
    if _on_kind(request):
        cluster: KindCluster | RealNodeCluster = request.getfixturevalue(
            "realnode_cluster" if _real_kubelets(request) else "kind_e2e"
        )
        return KubeClient(
            from_kubeconfig(cluster.kubeconfig),
            connect_timeout_s=30.0,
            read_timeout_s=30.0,
            pool_size=16,
        )
    control_plane: ControlPlane = request.getfixturevalue("control_plane")
    return admin_kube(control_plane.server, control_plane)


@pytest.fixture
def namespace(request: pytest.FixtureRequest, kube: KubeClient) -> Iterator[str]:
    """A fresh namespace with its ``default`` ServiceAccount, deleted after the test."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    if _on_kind(request):
        with contextlib.suppress(Conflict):
            kube.create(path("api", "v1", "namespaces"), {"metadata": {"name": name}})
        # Kind's controller-manager creates the ServiceAccount pods need.
        account = path("api", "v1", "namespaces", name, "serviceaccounts", "default")
        deadline = time.monotonic() + 60
        while not _exists(kube, account):
            assert time.monotonic() < deadline, f"no ServiceAccount default in {name} after 60 s"
            time.sleep(0.2)
    else:
        ensure_namespace(request.getfixturevalue("api_client"), name)
    yield name
    with contextlib.suppress(NotFound):
        kube.delete(path("api", "v1", "namespaces", name))


def _exists(kube: KubeClient, url_path: str) -> bool:
    try:
        kube.get(url_path)
    except NotFound:
        return False
    return True


@pytest.fixture
def backend(request: pytest.FixtureRequest, kube: KubeClient) -> BackendFn:
    """How a deployment is made: every component a local process on the suite's control
    plane, with ``--kind`` deployed in the Kind cluster from the manifests, with
    ``--real-kubelet`` too on the real kubelets of a Kind cluster."""
    if _real_kubelets(request):
        real: RealNodeCluster = request.getfixturevalue("realnode_cluster")

        def make_real(
            topology: Topology, scheduler: SchedulerUnderTest, controller_name: str
        ) -> Deployment:
            return RealKubeletDeployment(
                cluster=real,
                kube=kube,
                topology=topology,
                scheduler=scheduler,
                controller_name=controller_name,
            )

        return make_real
    if _on_kind(request):
        cluster: KindCluster = request.getfixturevalue("kind_e2e")
        image = _lib_value("PROJECT_IMAGE")

        def make_kind(
            topology: Topology, scheduler: SchedulerUnderTest, controller_name: str
        ) -> Deployment:
            return KindDeployment(
                cluster=cluster,
                kube=kube,
                topology=topology,
                scheduler=scheduler,
                controller_name=controller_name,
                image=image,
            )

        return make_kind
    control_plane: ControlPlane = request.getfixturevalue("control_plane")
    request.getfixturevalue("nrt_crd")

    def make(topology: Topology, scheduler: SchedulerUnderTest, controller_name: str) -> Deployment:
        return ProcessDeployment(
            kube=kube,
            kubeconfig=control_plane.kubeconfig,
            topology=topology,
            scheduler=scheduler,
            controller_name=controller_name,
        )

    return make


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Remember each phase's outcome on the item (``deploy`` reports logs on failure)."""
    report = yield
    setattr(item, f"e2e_report_{report.when}", report)
    return report


@pytest.fixture
def deploy(
    request: pytest.FixtureRequest,
    kube: KubeClient,
    backend: BackendFn,
    scheduler: SchedulerUnderTest,
    namespace: str,
) -> Iterator[DeployFn]:
    """Start a deployment of the given topology with the scheduler under test. After the
    test - the components' logs first, printed when it failed - the pods of ``namespace``
    are deleted at once (the control plane runs no namespace controller, and a Pending
    pod left behind would be the next scenario's), then the deployment is stopped and its
    nodes removed."""
    started: list[Deployment] = []

    def start(topology: Topology) -> Deployment:
        deployment = backend(topology, scheduler, unique("e2e"))
        started.append(deployment)
        deployment.start()
        return deployment

    yield start
    report = getattr(request.node, "e2e_report_call", None)
    if report is not None and report.failed:
        for deployment in started:
            print(f"=== components of {deployment.controller_name}:\n{deployment.diagnostics()}")
    kube.request(
        "DELETE",
        path("api", "v1", "namespaces", namespace, "pods"),
        what="delete the scenario's pods",
        query={"gracePeriodSeconds": "0"},
    )
    for deployment in reversed(started):
        deployment.stop()
