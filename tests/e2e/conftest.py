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
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import Conflict, NotFound
from exporter.kubesettings import from_kubeconfig
from schedulers.adapter import Adapter, Build
from schedulers.building import BuildError, binaries
from tests.controller.conftest import admin_kube
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.helpers import ensure_namespace
from tests.e2e.claims import broken_claims
from tests.e2e.cluster import unique
from tests.e2e.deployment import Deployment, ProcessDeployment, Topology
from tests.e2e.driver import drive, topology_for
from tests.e2e.findings import report
from tests.e2e.kind_deployment import KindDeployment, install_crds
from tests.e2e.outcome import Outcome, harness_problems
from tests.e2e.realnode_deployment import RealKubeletDeployment, RealNodeCluster
from tests.e2e.scenarios.model import Scenario
from tests.e2e.schedulers import chosen
from tests.kind.cluster import KindCluster, _lib_value

DeployFn = Callable[[Topology], Deployment]
#: (topology, scheduler under test, controller name) -> a deployment not started yet
BackendFn = Callable[[Topology, Adapter, str], Deployment]
#: Per test on Kind (the first one also brings the cluster up).
KIND_TIMEOUT_S = 900
#: Per test that needs a scheduler build: it may wait for a cold one (KAI: minutes).
BUILD_TIMEOUT_S = 3600
BUILD_LOG = Path(__file__).resolve().parents[2] / "build" / "scheduler-builds.log"
_BUILDS = pytest.StashKey[dict[Path, "Future[Path]"]]()


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


def _builds_of(item: pytest.Item) -> list[Build]:
    """The scheduler builds ``item`` needs: its scheduler's, and any ``build`` marker's."""
    callspec = getattr(item, "callspec", None)
    adapter = callspec.params.get("scheduler") if callspec is not None else None
    builds = [adapter.build] if isinstance(adapter, Adapter) and adapter.build else []
    return builds + [m.args[0] for m in item.iter_markers("build")]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that need a scheduler build run last, so the builds (started in the background
    once collection is done) overlap every other test; they may wait for a cold build. On
    Kind, a scenario may take longer than the suite's default timeout."""
    needing = [item for item in items if _builds_of(item)]
    if needing:
        items[:] = [item for item in items if not _builds_of(item)] + needing
        for item in needing:
            item.add_marker(pytest.mark.timeout(BUILD_TIMEOUT_S))
    if not config.getoption("--kind"):
        return
    for item in items:
        if "backend" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(KIND_TIMEOUT_S))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the builds the selected tests need, one after the other in a background
    thread (their progress in build/scheduler-builds.log); each test waits for its own."""
    builds = {b.script: b for item in session.items for b in _builds_of(item)}
    if not builds:
        return
    BUILD_LOG.parent.mkdir(parents=True, exist_ok=True)
    log = BUILD_LOG.open("a")
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scheduler-builds")
    session.config.stash[_BUILDS] = {
        script: executor.submit(binaries, build, progress=log) for script, build in builds.items()
    }
    executor.shutdown(wait=False)


@pytest.fixture(autouse=True)
def _scheduler_builds(request: pytest.FixtureRequest) -> None:
    """Wait for the builds this test needs (started after collection)."""
    started = request.config.stash.get(_BUILDS, {})
    for build in _builds_of(request.node):
        try:
            started[build.script].result()
        except BuildError as exc:
            raise AssertionError(f"{exc} - see {BUILD_LOG}") from None


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


@pytest.fixture
def run_scenario(
    deploy: DeployFn,
    kube: KubeClient,
    namespace: str,
    scheduler: Adapter,
    capsys: pytest.CaptureFixture[str],
) -> Callable[[Scenario], Outcome]:
    """``run_scenario(scenario)``: deploy it in its default variant with the scheduler under
    test, drive it (tests/e2e/driver.py), print its line and findings (and record it,
    tests/e2e/findings.py), then assert the harness's invariants and the claims the
    scheduler's adapter makes (tests/e2e/claims.py). Returns the outcome for the test's own
    assertions."""

    def run(scenario: Scenario) -> Outcome:
        d = deploy(topology_for(scenario, scenario.default_variant))
        outcome = drive(scenario, d, kube=kube, namespace=namespace)
        text = report(scheduler, scenario, outcome)
        with capsys.disabled():
            print(f"\n{text}")
        problems = harness_problems(outcome)
        assert problems == [], "the harness failed:\n" + "\n".join(problems)
        broken = broken_claims(scheduler, scenario, outcome)
        assert broken == [], f"{scheduler.id} breaks its claims:\n" + "\n".join(broken)
        return outcome

    return run
