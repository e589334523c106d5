"""Suite-wide fixtures: a real etcd + kube-apiserver for every test that needs Kubernetes.

The control plane is started once per session. If it cannot be built or started the
fixture raises, so every test that needs it errors loudly (in CI and locally alike):
nothing that needs the API server is ever skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from kubernetes import client

from tests.controlplane.cluster import ControlPlane, binaries_dir
from tests.controlplane.helpers import admin_client, ensure_namespace, install_crds
from tests.e2e.realnode_deployment import CLUSTER as REALNODE_CLUSTER
from tests.e2e.realnode_deployment import RealNodeCluster, bring_up, tear_down
from tests.e2e.schedulers import add_options as add_e2e_options
from tests.kind.cluster import KindCluster, kind_down, kind_up
from tests.realnode.realkubelet import delete_cluster

# Properties assert behaviour, never wall time: no per-example deadline anywhere. In CI the
# examples are derandomized, so a red run is reproducible from its log alone.
settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, database=None, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "default")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options must be registered by a conftest at the tests' root: the e2e suite's here."""
    add_e2e_options(parser)
    parser.addoption(
        "--kind",
        action="store_true",
        default=False,
        help="also run the tests marked `kind`, and the e2e scenarios (tests/e2e) on Kind "
        "with the components deployed in-cluster: a real Kind cluster is brought up with "
        "kind/up.sh for the session and deleted at the end (make test runs them)",
    )
    parser.addoption(
        "--real-kubelet",
        action="store_true",
        default=False,
        help="with --kind: run the e2e scenarios (tests/e2e) on real kubelets - a Kind "
        "cluster of real-kubelet workers reconfigured per scenario to its profile nodes, "
        "with the exporter and NRT publisher DaemonSets (docs/e2e.md)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without --kind, tests marked `kind` are deselected (not skipped): `make pytest`
    stays fast and needs no Docker; `make test` runs them in a second pytest run."""
    if config.getoption("--kind"):
        return
    deselected = [item for item in items if item.get_closest_marker("kind")]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not item.get_closest_marker("kind")]


@pytest.fixture(scope="session")
def kind(pytestconfig: pytest.Config) -> Iterator[KindCluster]:
    """A running Kind cluster with the project image loaded, one per session (kind/up.sh
    before the first test that needs it; kind/down.sh at the end - always, even when
    bringing it up failed). The scripts' progress lines are shown live (pytest's capture
    is suspended while they run)."""
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    try:
        with capture.global_and_fixture_disabled():
            cluster = kind_up(progress=sys.stderr)
        yield cluster
    finally:
        with capture.global_and_fixture_disabled():
            kind_down(progress=sys.stderr)


@pytest.fixture(scope="session")
def realnode_cluster(pytestconfig: pytest.Config) -> Iterator[RealNodeCluster]:
    """The session's Kind cluster of real-kubelet workers (tests/e2e/realnode_deployment.py)
    for the e2e scenarios on real kubelets and the oracle (tests/realnode): made before
    the first test that needs it, deleted at the end - also when making it failed."""
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    cluster: RealNodeCluster | None = None
    with tempfile.TemporaryDirectory(prefix="realnode-e2e-", dir="/tmp") as tmp:
        try:
            with capture.global_and_fixture_disabled():
                print("\n== real-kubelet cluster: bringing it up", file=sys.stderr, flush=True)
                start = time.monotonic()
                cluster = bring_up(Path(tmp))
                print(
                    f"== real-kubelet cluster up in {time.monotonic() - start:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
            yield cluster
        finally:
            if cluster is None:  # its bring-up failed half-way: by name
                delete_cluster(REALNODE_CLUSTER)
            tear_down(cluster)


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """A running etcd + kube-apiserver (RBAC, default admission plugins) on loopback."""
    with ControlPlane(bin_dir=binaries_dir()) as cp:
        yield cp


@pytest.fixture(scope="session")
def api_client(control_plane: ControlPlane) -> Iterator[client.ApiClient]:
    """An admin ApiClient (group system:masters) for the session's control plane."""
    api = admin_client(control_plane)
    ensure_namespace(api, "default")
    yield api
    api.close()


@pytest.fixture(scope="session")
def nrt_crd(api_client: client.ApiClient) -> list[str]:
    """The CRDs of manifests/crds installed and Established (NodeResourceTopology)."""
    return install_crds(api_client)


@pytest.fixture(scope="session")
def volcano_crd(api_client: client.ApiClient) -> list[str]:
    """Volcano's Numatopology CRD, from the Volcano source its adapter builds from
    (``schedulers/volcano/build.sh --crds``: extracted, not built), installed and
    Established."""
    script = Path(__file__).resolve().parents[1] / "schedulers" / "volcano" / "build.sh"
    found = subprocess.run(
        [str(script), "--crds"], check=True, capture_output=True, text=True
    ).stdout.split()[-1]
    return install_crds(api_client, files=[Path(found) / "nodeinfo.volcano.sh_numatopologies.yaml"])


@pytest.fixture
def namespace(api_client: client.ApiClient) -> Iterator[str]:
    """A fresh namespace (with its default ServiceAccount), deleted after the test."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    ensure_namespace(api_client, name)
    yield name
    try:
        client.CoreV1Api(api_client).delete_namespace(name)
    except client.ApiException as exc:
        if exc.status != 404:
            raise
