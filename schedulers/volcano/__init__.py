"""Volcano (github.com/volcano-sh/volcano at ed72c7c8) with its ``numa-aware`` plugin -
seed 004.

It runs as Volcano runs in a cluster, as local processes: the controller-manager's
PodGroup controller (one PodGroup per plain pod naming the scheduler) and the scheduler,
restricted to the deployment's nodes (``--node-selector``), over Volcano's CRDs. Volcano
reads no NodeResourceTopology: every fake node publishes Volcano's ``Numatopology`` as
its resource-exporter would (profile ``nrt.volcano``, docs/controller.md), and the pods
carry ``volcano.sh/numa-topology-policy`` = the nodes' Topology Manager policy, which the
plugin requires of a node. Built by ``build.sh`` from ``$NUMA_TESTKIT_VOLCANO_SOURCE``
(docs/schedulers/volcano.md).
"""

from __future__ import annotations

from pathlib import Path

from fakenrt.nrt.volcano import POD_POLICY_ANNOTATION
from schedulers.adapter import Adapter, Build, Component, Unschedulable

HERE = Path(__file__).parent
BUILD = Build(
    script=Path("schedulers/volcano/build.sh"),
    summary="Volcano's scheduler and controller-manager",
)
_COMMON = "--kubeconfig {kubeconfig} --scheduler-name {scheduler_name} --leader-elect=false"

VOLCANO = Adapter(
    scheduler="volcano",
    summary="Volcano with its numa-aware plugin (CPU alignment of Guaranteed pods) over "
    "Numatopology objects",
    scheduler_name="volcano",
    components=(
        Component(
            name="controller-manager",
            command="{bin}/controller-manager "
            + _COMMON
            + " --controllers pg-controller,queue-controller"
            " --enable-healthz --healthz-address 127.0.0.1:{port:cm-healthz}"
            " --listen-address 127.0.0.1:{port:cm-metrics} -v 2",
            ready_url="http://127.0.0.1:{port:cm-healthz}/healthz",
            stop_grace_s=5.0,
        ),
        Component(
            name="scheduler",
            command="{bin}/scheduler " + _COMMON + " --scheduler-conf {workdir}/conf/scheduler.conf"
            " --node-selector {node_selector_key}:{node_selector_value}"
            " --enable-healthz --healthz-address 127.0.0.1:{port:healthz}"
            " --listen-address 127.0.0.1:{port:metrics} --schedule-period 500ms -v 3",
            ready_url="http://127.0.0.1:{port:healthz}/healthz",
            stop_grace_s=5.0,
        ),
    ),
    # In a directory of its own: the scheduler reloads its configuration on any write in
    # that directory (pkg/scheduler/scheduler.go watchSchedulerConf), its log's included.
    files={"conf/scheduler.conf": Path("scheduler.conf")},
    build=BUILD,
    install=("{bin}/crds",),
    pod_annotations={POD_POLICY_ANNOTATION: "{topology_policy}"},
    nrt={"volcano": True},
    # "container <name> cannot be assigned by numa" (the plugin's FitError), in a
    # FailedScheduling event and the PodScheduled condition.
    unschedulable=Unschedulable(),
    claims=frozenset(),
    # Its predicates plugin runs kube-scheduler's DynamicResources (on by default with the
    # DynamicResourceAllocation feature, GA) and its binder reserves what it allocated.
    allocates_claims=True,
    # Every Volcano scheduler takes every PodGroup and queue in the cluster, whatever its
    # name (pkg/scheduler/cache/util.go responsibleForPodGroup): two at once fight.
    exclusive=True,
    here=HERE,
)
ADAPTERS = (VOLCANO,)
