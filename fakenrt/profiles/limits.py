"""The largest machines a profile may describe, so that a hostile or mistyped size is a
clear error instead of a hang or an out-of-memory kill. Pure constants; documented in
docs/profiles.md ("Limits").
"""

from __future__ import annotations

#: CPU ids are below 8192: Linux's largest ``NR_CPUS`` (x86-64 ``MAXSMP``).
MAX_CPUS = 8192
#: Devices of one resource on one node (zones and no-affinity devices together).
MAX_DEVICES_PER_RESOURCE = 1024
#: Memory, hugepages and ``allocated`` amounts: the kubelet holds them in int64.
MAX_QUANTITY = 2**63 - 1
#: NUMA nodes of a node whose Topology Manager policy aligns (any policy but ``none``).
#: The kubelet enumerates every subset of NUMA nodes for each resource (2^n masks, see
#: ``bitmask.IterateBitMasks`` in ``pkg/kubelet/cm/topologymanager``), and so does the
#: simulator, faithfully: 16 nodes are 65,535 masks (about a second per pod), 24 would be
#: 16.7 million. The kubelet itself refuses more than 8 unless
#: ``max-allowable-numa-nodes`` raises its limit; fakenrt stops at 16.
MAX_ALIGNED_NUMA_NODES = 16
#: Nodes in one profile file: Kubernetes' largest supported cluster (5,000 nodes, the
#: scalability SLOs), as ``fakenrt simulate``'s scenarios.
MAX_NODES = 5_000
