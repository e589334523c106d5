"""The kubernetes library's parts imported without the rest (``exporter.kubeparts``), in
fresh interpreters started as the image starts the exporter (``python3 -S``, modules from
``PYTHONPATH``).

These tests pin the library as installed: the exact modules of the library that the
exporter's in-cluster start imports. A release that imports more (or moves what the
exporter uses) fails here, and its cost is then measured again
(``benchmarks/bench_exporter.py``) before the pinned series in pyproject.toml is moved.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from exporter import kubeparts
from tests.controlplane.cluster import ControlPlane

REPO = Path(__file__).resolve().parents[2]

#: The library's modules `numa-exporter run` imports in a pod (in-cluster credentials):
#: the REST layer (with its retry and keepalive helpers), its configuration and
#: exceptions, the in-cluster loader with the configuration errors, and the bare packages
#: around them (the quantity parser comes on a first parse; the daemon only formats).
IN_CLUSTER_MODULES = {
    "kubernetes",
    "kubernetes.client",
    "kubernetes.client.configuration",
    "kubernetes.client.exceptions",
    "kubernetes.client.rest",
    "kubernetes.config",
    "kubernetes.config.config_exception",
    "kubernetes.config.incluster_config",
    "kubernetes.utils",
    "kubernetes.utils._retry_base",
    "kubernetes.utils.keepalive",
    "kubernetes.utils.retry",
}
#: What the whole library would bring and the exporter never runs.
NOT_IMPORTED = (
    "requests",
    "requests_oauthlib",
    "oauthlib",
    "websocket",
    "pydantic",
    "yaml",
    "dateutil",
    "kubernetes.client.api_client",
    "kubernetes.client.models",
    "kubernetes.config.kube_config",
    "kubernetes.dynamic",
    "kubernetes.stream",
    "kubernetes.watch",
)

START = """
import json, sys
from pathlib import Path
from exporter import kubeparts
assert kubeparts.import_parts_only()
import exporter.commands, exporter.daemon  # what `numa-exporter run` imports
from exporter.kubeclient import KubeClient
from exporter.kubesettings import in_cluster
host, port, directory = sys.argv[1:]
env = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
kube = KubeClient(in_cluster(Path(directory), env=env))
answer = kube.get("/version")
print(json.dumps([sorted(sys.modules), answer.get("major")]))
"""


def _run(code: str, *args: str) -> str:
    env = dict(
        os.environ,
        PYTHONPATH=f"{REPO}:{sysconfig.get_paths()['purelib']}",
        PYTHONDONTWRITEBYTECODE="1",
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code, *args],
        check=False, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.controlplane
def test_the_in_cluster_start_imports_the_parts_it_uses(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    (tmp_path / "token").write_text(control_plane.admin_token)
    (tmp_path / "ca.crt").write_bytes(Path(control_plane.ca_file).read_bytes())
    host, _, port = control_plane.server.removeprefix("https://").rpartition(":")
    modules, major = json.loads(_run(START, host, port, str(tmp_path)))
    # the client works on those parts: a real request over TLS with the token
    assert major == "1"
    library = {m for m in modules if m == "kubernetes" or m.startswith("kubernetes.")}
    assert library == IN_CLUSTER_MODULES
    for name in NOT_IMPORTED:
        assert not any(m == name or m.startswith(f"{name}.") for m in modules), name


def test_a_bare_package_completes_itself_on_first_use() -> None:
    """Code that uses the library the ordinary way gets all of it: the names of the
    packages' own ``__init__`` appear on first use, the same objects as without bare
    packages."""
    code = """
import importlib.metadata, json, sys
from exporter import kubeparts
assert kubeparts.import_parts_only()
from kubernetes.client.rest import RESTClientObject
import kubernetes
assert "kubernetes.dynamic" not in sys.modules  # not yet: nothing asked the package
version = kubernetes.__version__  # a name of kubernetes/__init__.py: it runs now
from kubernetes import client, watch
from kubernetes.config import load_kube_config
from kubernetes.config.kube_config import load_kube_config as original
try:
    kubernetes.no_such_name
    missing = False
except AttributeError:
    missing = True
print(json.dumps([
    version == importlib.metadata.version("kubernetes"),
    load_kube_config is original,
    kubernetes.utils.create_from_yaml.__module__,
    client.rest.RESTClientObject is RESTClientObject,
    watch.Watch.__module__,
    "kubernetes.dynamic" in sys.modules,
    missing,
]))
"""
    assert json.loads(_run(code)) == [
        True, True, "kubernetes.utils.create_from_yaml", True, "kubernetes.watch.watch", True,
        True,
    ]  # fmt: skip


def test_nothing_changes_where_the_library_is_imported_already() -> None:
    # this test process imported the whole library (the tests' admin client)
    import kubernetes

    before = sys.modules["kubernetes"]
    assert kubeparts.import_parts_only() is False
    assert sys.modules["kubernetes"] is before is kubernetes
