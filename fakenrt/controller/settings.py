"""The controller's tunables, one frozen value shared by the core and the runner."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_CONTROLLER_NAME = "fakenrt"


@dataclass(frozen=True, kw_only=True)
class ControllerSettings:
    """Times are seconds on the controller's clock."""

    #: Value of the ``fakenrt.io/controller`` label on the nodes this controller owns.
    controller: str = DEFAULT_CONTROLLER_NAME
    #: Put the ``fakenrt.io/fake-node=true:NoSchedule`` taint on the nodes.
    taint: bool = True
    #: Seed of every random choice (NRT jitter, heartbeat phases).
    seed: int = 0
    #: Admission -> Running.
    start_delay: float = 0.0
    #: A change to a node's state becomes visible in its NRT after delay + U(0, jitter).
    nrt_delay: float = 0.0
    nrt_jitter: float = 0.0
    #: The NRT pod fingerprint also covers terminated (Succeeded / Failed) pods still on
    #: the node, as from a kubelet before 1.32; a profile's ``nrt`` may override it.
    nrt_fingerprint_terminated_pods: bool = False
    #: Write the deprecated NRT ``topologyPolicies`` field; a profile's ``nrt`` may
    #: override it.
    nrt_topology_policies: bool = True
    #: Also publish Volcano's ``Numatopology`` per node (its resource-exporter's shape);
    #: a profile's ``nrt.volcano`` may override it.
    nrt_volcano: bool = False
    #: Write the NRT as Koordinator's koordlet does (``v1alpha1``, its annotations and
    #: zones) instead of the topology exporter's ``v1alpha2``; a profile's
    #: ``nrt.koordlet`` may override it.
    nrt_koordlet: bool = False
    #: Re-publish every node's NRT this often even when nothing changed (0: never).
    nrt_refresh: float = 60.0
    #: How long a pod runs before it Succeeds when it has no run-duration annotation
    #: (None: until deleted).
    default_run_duration: float | None = None
    #: Lease duration written on the node Leases, and how often they are renewed.
    lease_duration: int = 40
    lease_renew_interval: float = 10.0
    #: How often the full node status (conditions' heartbeat times) is written again.
    node_status_interval: float = 60.0

    def __post_init__(self) -> None:
        for name in (
            "start_delay",
            "nrt_delay",
            "nrt_jitter",
            "nrt_refresh",
            "lease_renew_interval",
            "node_status_interval",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.default_run_duration is not None and self.default_run_duration < 0:
            raise ValueError("default_run_duration must not be negative")
        if self.lease_duration <= 0 or self.lease_renew_interval <= 0:
            raise ValueError("lease_duration and lease_renew_interval must be positive")
