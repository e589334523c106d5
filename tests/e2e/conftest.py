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
from schedulers.adapter import Adapter
from schedulers.building import BuildError, binaries
from tests.controller.conftest import admin_kube
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.helpers import ensure_namespace
from tests.e2e.cluster import unique
from tests.e2e.deployment import Deployment, ProcessDeployment, Topology
from tests.e2e.findings import Findings
from tests.e2e.kind_deployment import KindDeployment, install_crds
from tests.e2e.realnode_deployment import RealKubeletDeployment, RealNodeCluster
from tests.e2e.schedulers import chosen
from tests.kind.cluster import KindCluster, _lib_value

DeployFn = Callable[[Topology], Deployment]
#: (topology, scheduler under test, controller name) -> a deployment not started yet
BackendFn = Callable[[Topology, Adapter, str], Deployment]
#: Per test on Kind (the first one also brings the cluster up).
KIND_TIMEOUT_S = 900


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``scheduler``: the adapters ``--scheduler`` picks (default: the reference
    scheduler) and the ad-hoc one of ``--scheduler-command``; for tests marked
    ``every_mode`` every mode of each picked scheduler, else its default mode."""
    if "scheduler" not in metafunc.fixturenames:
        return
    for marker in metafunc.definition.iter_markers("parametrize"):
        if "scheduler" in str(marker.args[0]).replace(" ", "").split(","):
            return  # the test names its scheduler itself
    every_mode = metafunc.definition.get_closest_marker("every_mode") is not None
    picked = chosen(metafunc.config, every_mode=every_mode)
    metafunc.parametrize("scheduler", picked, ids=[a.id for a in picked])


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build what the selected scenarios' schedulers need before the first test runs, so
    a cold build (minutes) counts against no test's timeout; the builds' progress shows."""
    builds = {}
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        adapter = callspec.params.get("scheduler") if callspec is not None else None
        if isinstance(adapter, Adapter) and adapter.build is not None:
            builds[adapter.build.script] = adapter.build
    if not builds:
        return
    capture = session.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        for build in builds.values():
            try:
                binaries(build)
            except BuildError as exc:
                raise pytest.UsageError(f"building a scheduler under test: {exc}") from None


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

        def make_real(topology: Topology, scheduler: Adapter, controller_name: str) -> Deployment:
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

        def make_kind(topology: Topology, scheduler: Adapter, controller_name: str) -> Deployment:
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

    def make(topology: Topology, scheduler: Adapter, controller_name: str) -> Deployment:
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
def findings(
    kube: KubeClient, namespace: str, capsys: pytest.CaptureFixture[str]
) -> Callable[[Deployment, str], Findings]:
    """``findings(deployment, scenario)``: the scenario's :class:`Findings` (its line is
    printed to the terminal)."""

    def emit(line: str) -> None:
        with capsys.disabled():
            print(f"\n{line}")

    def make(deployment: Deployment, scenario: str) -> Findings:
        return Findings(
            scenario=scenario, deployment=deployment, kube=kube, namespace=namespace, emit=emit
        )

    return make


@pytest.fixture
def deploy(
    request: pytest.FixtureRequest,
    kube: KubeClient,
    backend: BackendFn,
    scheduler: Adapter,
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
