"""kubernetes-sigs/scheduler-plugins v0.35.4-devel: kube-scheduler with the
NodeResourceTopologyMatch plugin (filter, LeastNUMANodes score, reserve cache) reading
NRT v1alpha2 - seed 001. One profile named for the deployment (config.yaml beside this
module); the cache resyncs every 2 s."""

from __future__ import annotations

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
    # Its filter refuses a node with "cannot align container" / "cannot align pod".
    unschedulable=Unschedulable(reason="cannot align"),
    here=Path(__file__).parent,
)
ADAPTERS = (SCHEDULER_PLUGINS,)
