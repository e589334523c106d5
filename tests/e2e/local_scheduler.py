"""The scheduler under test beside a cluster deployment (Kind, real kubelets): its components
run as local processes against the cluster's admin kubeconfig, made when first asked for,
while the cluster's own components restart on their own."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from schedulers.adapter import Adapter
from tests.e2e.schedulers import PodScheduling, SchedulerRun

if TYPE_CHECKING:
    from tests.e2e.deployment import Topology


class _Cluster(Protocol):
    @property
    def kubeconfig(self) -> Path: ...


class LocalSchedulerRun:
    """Mixed into a cluster deployment dataclass, which declares these fields."""

    cluster: _Cluster
    scheduler: Adapter
    controller_name: str
    topology: Topology
    workdir: Path
    _run: SchedulerRun | None

    @property
    def run(self) -> SchedulerRun:
        """The scheduler under test's components as local processes (a scheduler other
        than the reference scheduler's in-cluster Deployment)."""
        if self._run is None:
            self._run = SchedulerRun(
                adapter=self.scheduler,
                kubeconfig=self.cluster.kubeconfig,
                controller_name=self.controller_name,
                workdir=self.workdir / "scheduler",
                topology_policy=self.topology.topology_policy,
            )
        return self._run

    @property
    def pod_scheduling(self) -> PodScheduling:
        return self.run.pod_scheduling

    def check_alive(self) -> None:
        """The in-cluster components restart on their own; a scheduler run as local
        processes must still run."""
        if self._run is not None and self.scheduler.in_cluster_args is None:
            self._run.check_alive()
