"""Koordinator (github.com/koordinator-sh/koordinator at a7a1b76b): koord-scheduler with
its ``NodeNUMAResource`` plugin - seed 003.

koord-scheduler runs as a local process with the profile Koordinator ships (config.yaml
beside this module), over Koordinator's CRDs. It reads each node's NRT through
``v1alpha1`` with the content Koordinator's node agent koordlet writes: every fake node
publishes that shape (profile ``nrt.koordlet``, docs/controller.md) - the kubelet's
Topology Manager policy and scope as koordlet reports them, the CPU topology, the CPU
Manager policy and the CPUs the kubelet pinned. Two modes: ``koordlet`` (the default)
configures nothing else - a node's NUMA policy is what the scheduler makes of koordlet's
report -, ``node-label`` labels every node ``node.koordinator.sh/numa-topology-policy``
with its kubelet's policy, as Koordinator's documentation asks of an operator. Built by
``build.sh`` from ``$NUMA_TESTKIT_KOORDINATOR_SOURCE`` (docs/schedulers/koordinator.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from schedulers.adapter import Adapter, Build, Component, Unschedulable

HERE = Path(__file__).parent

#: The node label Koordinator's scheduler takes a node's NUMA policy from before NRT's
#: ``topologyPolicies`` (``getNUMATopologyPolicy``), in its spelling.
NUMA_POLICY_LABEL = "node.koordinator.sh/numa-topology-policy"

KOORDLET = Adapter(
    scheduler="koordinator",
    mode="koordlet",
    summary="koord-scheduler with NodeNUMAResource over koordlet-shaped NRT v1alpha1; a "
    "node's NUMA policy as koordlet reports the kubelet's (its default)",
    scheduler_name="koord-scheduler",
    components=(
        Component(
            name="scheduler",
            # --port 0: its insecure server (10251) would otherwise listen whatever the
            # config file says, and two scenarios at once collide on it.
            command="{bin}/koord-scheduler --config {workdir}/config.yaml"
            " --bind-address 127.0.0.1 --secure-port {port:https} --port 0 -v 2",
            # Its server answers /healthz and /metrics only (no /readyz).
            ready_url="https://127.0.0.1:{port:https}/healthz",
            # It may ignore SIGTERM while it waits for the API server.
            stop_grace_s=5.0,
        ),
    ),
    files={"config.yaml": Path("config.yaml")},
    build=Build(
        script=Path("schedulers/koordinator/build.sh"),
        summary="Koordinator's koord-scheduler",
    ),
    install=("{bin}/crds", "namespace.yaml"),
    nrt={"koordlet": True},
    # NodeNUMAResource refuses a node with "Unsatisfied NUMA <resource>" (FailedScheduling).
    unschedulable=Unschedulable(),
    # The profile keeps kube-scheduler's default plugins, DynamicResources among them
    # (koord-scheduler builds on the in-tree registry): it allocates and reserves claims.
    allocates_claims=True,
    claims=frozenset(),
    here=HERE,
)
NODE_LABEL = replace(
    KOORDLET,
    mode="node-label",
    default=False,
    summary="koord-scheduler with NodeNUMAResource, every node labelled with its kubelet's "
    "Topology Manager policy as Koordinator's documentation asks "
    f"({NUMA_POLICY_LABEL})",
    node_labels={NUMA_POLICY_LABEL: "{topology_policy:koordinator}"},
)
ADAPTERS = (KOORDLET, NODE_LABEL)
