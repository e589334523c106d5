"""``numa-exporter run`` started as the image starts it (``python3 -S``, modules from
``PYTHONPATH``, credentials as in-cluster ones: a token file and a CA file) against the
real API server: it annotates a pod, SIGTERM and SIGINT are taken by the main thread
only, and the import-time heap (the kubernetes library's most of all) is imported with
the garbage collector off and frozen out of its sight before the threads start, the
collector on again after; gRPC's core is set up before grpc is imported, and of the
kubernetes library only the parts used are imported (start-up CPU and resident memory
are paid on every node; ``benchmarks/bench_exporter.py`` measures them)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from kubernetes import client

from exporter.annotations import OBSERVED_PLACEMENT
from exporter.podresources_settings import GRPC_EXPERIMENTS
from tests.controlplane.cluster import ControlPlane
from tests.exporter import scenarios as s
from tests.exporter.fake_podresources import FakePodResources
from tests.exporter.kube_helpers import annotations_of, create_pod, wait_until

pytestmark = pytest.mark.controlplane

REPO = Path(__file__).resolve().parents[2]
#: The console script's body, reporting the process's modules and frozen heap at exit.
PROBE = """
import atexit, gc, sys
OUT = sys.argv.pop(1)
def report():
    import json, os  # the daemon imported them already
    with open(OUT, "w") as out:
        json.dump([sorted(sys.modules), gc.get_freeze_count(), gc.isenabled(),
                   os.environ.get("GRPC_EXPERIMENTS")], out)
atexit.register(report)
from exporter.cli import main
main()
"""


def _blocked_signals(pid: int) -> dict[str, set[int]]:
    """Thread id -> the signals it blocks (``SigBlk`` of /proc/<pid>/task/<tid>/status)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        status = (task / "status").read_text()
        mask = int(status.split("SigBlk:", 1)[1].split()[0], 16)
        out[task.name] = {n + 1 for n in range(64) if mask >> n & 1}
    return out


def test_run_as_the_image_starts_it(
    *,
    control_plane: ControlPlane,
    api_client: client.ApiClient,
    namespace: str,
    fake_kubelet: FakePodResources,
    sysfs_root: Path,
    tmp_path: Path,
) -> None:
    node = f"node-{uuid.uuid4().hex[:8]}"
    token = tmp_path / "token"
    token.write_text(control_plane.admin_token)
    kubeconfig = tmp_path / "kubeconfig.json"
    kubeconfig.write_text(
        json.dumps(
            {
                "current-context": "c",
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": control_plane.server,
                            "certificate-authority": str(control_plane.ca_file),
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"tokenFile": str(token)}}],
            }
        )
    )
    fake_kubelet.set_pods([replace(s.CPU_ONLY, namespace=namespace)])
    create_pod(api_client, namespace, "cpu-only", node=node)
    report = tmp_path / "report"
    env = dict(
        os.environ,
        PYTHONPATH=f"{REPO}:{sysconfig.get_paths()['purelib']}",
        PYTHONDONTWRITEBYTECODE="1",
    )
    proc = subprocess.Popen(
        [sys.executable, "-S", "-c", PROBE, str(report), "run", "--node-name", node,
         "--podresources-socket", str(fake_kubelet.socket_path),
         "--sysfs-root", str(sysfs_root), "--kubeconfig", str(kubeconfig),
         "--metrics-bind-address", "127.0.0.1:0", "--poll-interval", "0.2"],
        env=env, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_until(
            lambda: (
                OBSERVED_PLACEMENT in annotations_of(api_client, namespace, "cpu-only")
                or proc.poll() is not None
            ),
            what="the pod annotated",
        )
        # SIGTERM and SIGINT are blocked in every thread but the main one, which takes
        # them with sigwait (the kernel unblocks them there while it waits): a thread
        # that took the kubelet's SIGTERM would leave it unseen
        masks = _blocked_signals(proc.pid)
        workers = {tid: blocked for tid, blocked in masks.items() if tid != str(proc.pid)}
        assert len(workers) >= 2, masks
        for thread, blocked in workers.items():
            assert {signal.SIGTERM, signal.SIGINT} <= blocked, (thread, masks)
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=60)
    assert OBSERVED_PLACEMENT in annotations_of(api_client, namespace, "cpu-only"), stderr
    assert proc.returncode == 0, stderr.decode()[-2000:]
    modules, frozen, collecting, experiments = json.loads(report.read_text())
    assert "exporter.daemon" in modules  # the probe saw the daemon's imports
    assert frozen > 1000
    assert collecting  # off for the imports, on again once their heap is frozen
    assert experiments == GRPC_EXPERIMENTS  # set before grpc was imported
    # a kubeconfig brings the library's kubeconfig loader (requests, oauthlib), but not
    # the parts of the library the exporter never runs
    assert "kubernetes.config.kube_config" in modules
    for unused in ("kubernetes.dynamic", "kubernetes.stream", "kubernetes.watch",
                   "kubernetes.leaderelection", "kubernetes.informer",
                   "kubernetes.utils.create_from_yaml", "websocket"):  # fmt: skip
        assert unused not in modules, unused
