"""KAI-Scheduler (github.com/kai-scheduler/KAI-Scheduler at d5bc503a, v0.17.0-9) with its
``numa`` plugin - the design of seed 000 - in both modes: reconstructing zone use from
placements (``reconstructAvailable``, its default) and trusting NRT ``available``.

It runs as KAI runs in a cluster, as local processes: the binder (binds what the
scheduler decided, writing ``kai.scheduler/numa-placement-predicted``), the podgrouper
(one PodGroup per pod) and the scheduler, each restricted to the deployment with KAI's
node-pool partition (``--nodepool-label-key fakenrt.io/controller
--partition-label-value <deployment>``), over KAI's CRDs and a queue pair per deployment
(``queues.yaml``). Built by ``build.sh`` from ``$NUMA_TESTKIT_KAI_SOURCE``
(docs/schedulers/kai.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from schedulers.adapter import Adapter, Build, Component, Unschedulable

HERE = Path(__file__).parent
BUILD = Build(
    script=Path("schedulers/kai/build.sh"),
    summary="KAI's scheduler, binder, podgrouper and numa-placement-exporter",
)
_ENV = {"KUBECONFIG": "{kubeconfig}"}
_CONF = (HERE / "scheduler-conf.yaml").read_text()
_TRUST_NRT = '    arguments:\n      reconstructAvailable: "false"\n'

RECONSTRUCTION = Adapter(
    scheduler="kai",
    mode="reconstruction",
    summary="KAI-Scheduler with its numa plugin, rebuilding zone use from observed (else "
    "predicted) placements (its default)",
    scheduler_name="kai-scheduler",
    components=(
        Component(
            name="binder",
            command="{bin}/binder --scheduler-name {scheduler_name}"
            " --metrics-bind-address 127.0.0.1:{port:binder-metrics}"
            " --health-probe-bind-address 127.0.0.1:{port:binder-health}",
            env=_ENV,
        ),
        Component(
            name="podgrouper",
            command="{bin}/podgrouper --scheduler-name {scheduler_name}"
            " --nodepool-label-key {node_selector_key}"
            " --metrics-bind-address 127.0.0.1:{port:podgrouper-metrics}"
            " --health-probe-bind-address 127.0.0.1:{port:podgrouper-health}",
            env=_ENV,
            ready_url="http://127.0.0.1:{port:podgrouper-health}/readyz",
        ),
        Component(
            name="scheduler",
            command="{bin}/scheduler --scheduler-name {scheduler_name}"
            " --scheduler-conf {workdir}/scheduler-conf.yaml"
            " --nodepool-label-key {node_selector_key}"
            " --partition-label-value {node_selector_value}"
            " --listen-address 127.0.0.1:{port:scheduler-metrics}"
            " --plugin-server-port {port:scheduler-plugins}",
            env=_ENV,
            ready_url="http://127.0.0.1:{port:scheduler-metrics}/metrics",
        ),
    ),
    files={"scheduler-conf.yaml": _CONF},
    build=BUILD,
    install=("{bin}/crds",),
    objects=(Path("queues.yaml"),),
    pod_labels={
        "kai.scheduler/queue": "numa-testkit-{node_selector_value}",
        # The node pool: the podgrouper copies it onto the pod's PodGroup.
        "fakenrt.io/controller": "{node_selector_value}",
    },
    # KAI schedules a pod with a standalone GPU claim only when the claim carries the pod's
    # queue label (pkg/scheduler/plugins/dynamicresources: validateSharedGpuClaimQueueLabel).
    claim_labels={"kai.scheduler/queue": "numa-testkit-{node_selector_value}"},
    predicts_placement=True,
    # Its dynamicresources plugin allocates claims (kube-scheduler's allocator) and its
    # binder writes the allocation and reservation (pkg/binder/plugins/k8s-plugins).
    allocates_claims=True,
    # Its binder reconciles every BindRequest in the cluster, whatever the scheduler name:
    # a second deployment's binder would race this one's (pkg/binder/controllers/
    # bindrequest_controller.go watches them all; only the pod controller filters).
    one_per_cluster=True,
    # "node cannot NUMA-align the pod's resources under its Topology Manager policy", as
    # an Unschedulable event (and the PodScheduled condition).
    unschedulable=Unschedulable(),
    claims=frozenset(),
    here=HERE,
)
TRUST_NRT = replace(
    RECONSTRUCTION,
    mode="trust-nrt",
    default=False,
    summary="KAI-Scheduler with its numa plugin trusting NRT available "
    '(reconstructAvailable: "false")',
    files={"scheduler-conf.yaml": _CONF + _TRUST_NRT},
)
ADAPTERS = (RECONSTRUCTION, TRUST_NRT)
