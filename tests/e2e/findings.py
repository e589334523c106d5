"""What a scenario finds about the scheduler under test, and what it asserts.

Harness invariants hold for every scheduler and are asserted (:meth:`Findings.invariants`):
every TopologyAffinityError counted is one the kubelet made, no CPU or GPU is held by two
pods, what the exporter observes is what the kubelet allocated. A scheduler property
(:class:`~schedulers.adapter.Claim`) is asserted when the adapter claims it and recorded
as a finding otherwise (:meth:`Findings.check`). :meth:`Findings.report` prints the
scenario's line and, when ``$NUMA_TESTKIT_FINDINGS`` names a file, appends the record to it
as one JSON line (docs/schedulers/README.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from exporter.kubeclient import KubeClient
from schedulers.adapter import Claim
from tests.e2e.cluster import (
    Figures,
    double_allocations,
    figures,
    kubelet_rejections,
    observation_mismatches,
    prediction_agreement,
    prediction_mismatches,
    unexplained_rejections,
)
from tests.e2e.deployment import Deployment

#: Where the records go (JSON lines), when set.
FINDINGS_ENV = "NUMA_TESTKIT_FINDINGS"


@dataclass
class Findings:
    """One scenario's findings about one deployment's scheduler."""

    scenario: str
    deployment: Deployment
    kube: KubeClient
    namespace: str
    #: Where the scenario's line goes (the terminal, past pytest's capture).
    emit: Callable[[str], None] = print
    #: ``<claim>: <what was seen>`` for every property the scheduler did not show.
    notes: list[str] = field(default_factory=list)
    #: Scenario-specific figures added to the record.
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def claims(self) -> frozenset[Claim]:
        return self.deployment.scheduler.claims

    def check(self, claim: Claim, ok: bool, detail: str) -> bool:
        """Assert ``ok`` when the scheduler claims ``claim``; otherwise note it. Returns
        ``ok``."""
        if ok:
            return True
        adapter = self.deployment.scheduler
        if claim in adapter.claims:
            raise AssertionError(
                f"[e2e {self.scenario}] {adapter.id} claims {claim.value}: {detail}\n"
                + self.deployment.diagnostics()
            )
        self.notes.append(f"{claim.value}: {detail}")
        return False

    def invariants(self, listed: Iterable[Mapping[str, Any]]) -> None:
        """Assert what must hold whatever the scheduler did."""
        items = list(listed)
        held = self.deployment.allocations(items)
        profiles = {p.name: p for p in self.deployment.profiles}
        problems = [
            *unexplained_rejections(items, kubelet_rejections(self.kube, self.namespace)),
            *double_allocations(items, held),
            *observation_mismatches(items, profiles, held),
        ]
        assert problems == [], (
            f"[e2e {self.scenario}] harness invariants broken:\n"
            + "\n".join(problems)
            + "\n"
            + self.deployment.diagnostics()
        )

    def predictions(self, listed: Iterable[Mapping[str, Any]]) -> None:
        """Check ``exact-prediction`` on the Running pods."""
        mismatches = prediction_mismatches(listed)
        self.check(Claim.EXACT_PREDICTION, not mismatches, "; ".join(mismatches))

    def figures(self, listed: Iterable[Mapping[str, Any]], *, gone: Iterable[str] = ()) -> Figures:
        """The outcome counts of ``listed``. ``gone``: pods of the scenario deleted by
        someone else (a scheduler evicting them): counted as submitted, and as
        TopologyAffinityErrors when their kubelet had rejected them (its event says)."""
        result = figures(listed)
        deleted = sorted(gone)
        if not deleted:
            return result
        by_kubelet = kubelet_rejections(self.kube, self.namespace)
        return replace(
            result,
            submitted=result.submitted + len(deleted),
            topology_affinity_errors=result.topology_affinity_errors
            + sum(1 for n in deleted if by_kubelet.get(n)),
        )

    def report(
        self, listed: Iterable[Mapping[str, Any]], *, gone: Iterable[str] = ()
    ) -> dict[str, Any]:
        """Print the scenario's line and record it; return the record (``gone``: as
        :meth:`figures`)."""
        items = list(listed)
        deleted = sorted(gone)
        result = self.figures(items, gone=deleted)
        if deleted:
            self.extra["deleted"] = len(deleted)
        predicted, agreed = prediction_agreement(items)
        adapter = self.deployment.scheduler
        record: dict[str, Any] = {
            "scheduler": adapter.scheduler,
            "mode": adapter.mode,
            "adapter": adapter.id,
            "scenario": self.scenario,
            "submitted": result.submitted,
            "bound": result.bound,
            "ran": result.ran,
            "running": result.running,
            "topology_affinity_errors": result.topology_affinity_errors,
            "pending": result.pending,
            "predicted": predicted,
            "prediction_agreement": agreed / predicted if predicted else None,
            "claims": sorted(c.value for c in adapter.claims),
            "findings": list(self.notes),
            **self.extra,
        }
        agreement = f"{agreed}/{predicted}" if predicted else "none predicted"
        line = f"[e2e {self.scenario}] {result.line(adapter.id)} predictions={agreement}"
        line += "".join(f" {k}={v}" for k, v in self.extra.items())
        if self.notes:
            line += "\n  findings: " + "\n  findings: ".join(self.notes)
        self.emit(line)
        target = os.environ.get(FINDINGS_ENV)
        if target:
            with Path(target).open("a") as out:
                out.write(json.dumps(record, sort_keys=True) + "\n")
        return record
