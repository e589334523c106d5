"""The stock kube-scheduler at the control plane's pinned version: NUMA-blind, the
baseline every cluster starts from. Its binary is the control plane's own build
(tests/controlplane/build.sh); its default plugins, one profile named for the deployment.
Its DynamicResources plugin allocates ResourceClaims: the DRA scenarios run for it."""

from __future__ import annotations

from pathlib import Path

from schedulers.adapter import Adapter, Build, Component

#: The control plane's build: kube-apiserver, kube-controller-manager, kube-scheduler, etcd.
CONTROL_PLANE = Build(
    script=Path("tests/controlplane/build.sh"),
    override_env="NUMA_TESTKIT_CONTROLPLANE_BIN",
    summary="the control plane's kube-apiserver, kube-controller-manager, kube-scheduler, etcd",
)
_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: {kubeconfig}
profiles:
- schedulerName: {scheduler_name}
"""

KUBE_SCHEDULER = Adapter(
    scheduler="kube-scheduler",
    summary="the stock kube-scheduler at the control plane's version, default plugins (NUMA-blind)",
    scheduler_name="kube-scheduler",
    components=(
        Component(
            name="scheduler",
            command="{bin}/kube-scheduler --config {workdir}/config.yaml"
            " --bind-address 127.0.0.1 --secure-port {port:https} -v 1",
            ready_url="https://127.0.0.1:{port:https}/readyz",
        ),
    ),
    files={"config.yaml": _CONFIG},
    build=CONTROL_PLANE,
    # Its default plugins include DynamicResources (DRA is GA since v1.34).
    allocates_claims=True,
    here=Path(__file__).parent,
)
ADAPTERS = (KUBE_SCHEDULER,)
