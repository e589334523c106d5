"""kubernetes-sigs/scheduler-plugins v0.35.4-devel: kube-scheduler with the
NodeResourceTopologyMatch plugin (filter, LeastNUMANodes score, reserve cache) reading
NRT v1alpha2 - seed 001. One profile named for the deployment (config.yaml beside this
module); the cache resyncs every 2 s.

Two modes: against the nodes as a current kubelet (1.32 and later) reports them - its
default - and with the NRT pod fingerprint covering terminated pods too, as a kubelet
before 1.32 reported them, which is what its cache's dedicated pod informer computes
(docs/schedulers/scheduler-plugins.md)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from schedulers.adapter import Adapter, Build, Component, Unschedulable

SCHEDULER_PLUGINS = Adapter(
    scheduler="scheduler-plugins",
    summary="scheduler-plugins v0.35.4-devel: NodeResourceTopologyMatch with LeastNUMANodes "
    "scoring and its reserve cache",
    scheduler_name="topo-aware-scheduler",
    components=(
        Component(
            name="scheduler",
            command="{bin}/scheduler --config {workdir}/config.yaml"
            " --bind-address 127.0.0.1 --secure-port {port:https} -v 2",
            ready_url="https://127.0.0.1:{port:https}/readyz",
            # While it waits for an unreachable API server it ignores SIGTERM.
            stop_grace_s=5.0,
        ),
    ),
    files={"config.yaml": Path("config.yaml")},
    build=Build(
        script=Path("schedulers/scheduler_plugins/build.sh"),
        summary="scheduler-plugins' kube-scheduler (cmd/scheduler)",
    ),
    # The scheduler framework's default plugins at its Kubernetes version (1.35) include
    # DynamicResources, which allocates claims; the profile adds to the defaults.
    allocates_claims=True,
    # Its filter refuses a node with "cannot align container" / "cannot align pod".
    unschedulable=Unschedulable(reason="cannot align"),
    here=Path(__file__).parent,
)
TERMINATED_FINGERPRINT = replace(
    SCHEDULER_PLUGINS,
    mode="terminated-fingerprint",
    default=False,
    summary="scheduler-plugins v0.35.4-devel on nodes whose NRT pod fingerprint covers "
    "terminated pods (a kubelet before 1.32), as its cache computes it",
    nrt={"fingerprintTerminatedPods": True},
)
ADAPTERS = (SCHEDULER_PLUGINS, TERMINATED_FINGERPRINT)
