"""Runs a scenario's steps on a deployment and records what happened (an
:class:`~tests.e2e.outcome.Outcome`). I/O.

The driver submits the scenario's pods (pacing them as the scenario says), performs its
steps, then waits until the run has **settled**:

* no pod is bound and still waiting for its kubelet's verdict;
* every pod that finishes (a run duration) has finished, or was never bound;
* every pod never bound is reported unplaceable by the scheduler (``PodScheduled=False``
  with reason ``Unschedulable``, or one of the adapter's event reasons) and nothing has
  changed for the adapter's ``quiet_s`` plus the NRT lag (a scheduler retrying after its
  backoff, or waiting for NRT to catch up, may still place it), or nothing has changed for
  :data:`SILENT_S`;

or until the scenario's settle timeout (the outcome then says it did not settle). Then it
waits, bounded, for the exporter's annotations (with the exporter) and every node's NRT to
match what the kubelets hold, and records what did not.

It polls the namespace's pods every :data:`POLL_S` (the timeline's resolution) and checks
at every poll that no CPU or device is held by two pods (for longer than a finished pod's
status takes to land: ``invariants.HELD_TWICE_S``). A scenario whose pods use
ResourceClaims gets each pod's claim created just before it, the claims listed at every
poll (a Running pod holds its claims' devices: tests/e2e/dra.py), and - with the exporter
- waits, bounded, until the exporters' metric and Events name exactly the pods that run
misaligned. It asserts nothing about the
scheduler: only a harness failure (a pre-bound pod that never runs) raises.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from exporter.annotations import OBSERVED_MEMORY_GROUPS
from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import Transient
from fakenrt.durations import parse_duration
from tests.e2e.allocations import Allocations
from tests.e2e.cluster import (
    create,
    create_claim,
    nrt_converged,
    pods,
    resource_claim,
    resource_claims,
    workload_pod,
)
from tests.e2e.deployment import Deployment, ExporterMetrics, Topology
from tests.e2e.dra import metric_misaligned, misaligned_pods, reported_misaligned, with_claims
from tests.e2e.invariants import double_allocations, lasting_doubles, observation_mismatches
from tests.e2e.outcome import (
    Outcome,
    Transition,
    annotations_of,
    deleted_as_seen,
    node_of,
    phase,
    scheduler_messages,
    scheduler_reports,
    unschedulable_condition,
)
from tests.e2e.scenarios.model import (
    AwaitBaseline,
    AwaitBound,
    AwaitDecided,
    KillController,
    PodTemplate,
    RestartController,
    Scenario,
    Step,
    Submit,
    with_lag,
)
from tests.e2e.variants import Variant

POLL_S = 0.25
#: The namespace's events are listed at most this often (every poll that is due).
EVENTS_EVERY_S = 1.0
#: Quiet period after which pods the scheduler never reported count as settled too.
SILENT_S = 30.0
#: Beyond the NRT lag: how long the exporter and NRT get to catch up after settling.
CONVERGE_S = 20.0
TERMINAL = ("Succeeded", "Failed")


def topology_for(scenario: Scenario, variant: Variant) -> Topology:
    """The deployment's topology for ``scenario`` in ``variant`` (fresh node names)."""
    return Topology(
        nodes=with_lag(scenario.nodes(), variant.lag),
        controller_args=scenario.controller_args,
        exporters=variant.exporter,
    )


def lag_bound_s(variant: Variant) -> float:
    """The longest an NRT change takes to show in this variant."""
    return parse_duration(variant.lag.delay) + parse_duration(variant.lag.jitter)


@dataclass
class _Run:
    """One run's polling state: the latest listing, the timeline, the harness's findings."""

    scenario: Scenario
    deployment: Deployment
    kube: KubeClient
    namespace: str
    variant: Variant
    t0: float = field(default_factory=time.monotonic)
    listed: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    events_at: float = float("-inf")
    seen: dict[str, tuple[str | None, str, bool]] = field(default_factory=dict)
    timeline: list[Transition] = field(default_factory=list)
    last_change: float = 0.0
    first_submit: float | None = None
    doubles: set[str] = field(default_factory=set)
    #: Double holds seen, not yet for HELD_TWICE_S (tests/e2e/invariants.py), since when.
    double_suspects: dict[str, float] = field(default_factory=dict)
    #: What the kubelets held at the last poll, for the pods it listed; None when that poll
    #: could not ask them (the API or a kubelet restarting, scenario f).
    held_now: Allocations | None = None
    notes: list[str] = field(default_factory=list)
    submitted: set[str] = field(default_factory=set)
    manifests: list[dict[str, Any]] = field(default_factory=list)
    deleted: dict[str, dict[str, Any]] = field(default_factory=dict)
    seen_events: set[str] = field(default_factory=set)
    #: The namespace's ResourceClaims as last listed (scenarios using claims only).
    claims: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.deployment.scheduler.unschedulable.event_reasons

    def now(self) -> float:
        return time.monotonic() - self.t0

    # ---- polling -----------------------------------------------------------------------

    def poll(self) -> None:
        """List the pods (and, every EVENTS_EVERY_S, the events); extend the timeline.
        Raises AssertionError when a component exited."""
        self.deployment.check_alive()
        self.held_now = None
        try:
            listed = pods(self.kube, self.namespace)
            if self.scenario.needs_claims:
                self.claims = resource_claims(self.kube, self.namespace)
            if self.now() - self.events_at >= EVENTS_EVERY_S:
                self.see_events(_events(self.kube, self.namespace))
        except Transient:
            return
        at = round(self.now(), 2)
        for name in self.listed.keys() - listed.keys():
            if name in self.submitted and name not in self.deleted:
                self.deleted[name] = self.listed[name]
                self.last_change = self.now()
                self.timeline.append(Transition(at, name, "deleted", "by someone else"))
        for name, pod in listed.items():
            state = (node_of(pod), phase(pod), unschedulable_condition(pod) is not None)
            before = self.seen.get(name)
            if before == state:
                continue
            self.seen[name] = state
            if before is None or state[:2] != before[:2]:
                self.last_change = self.now()
            if state[0] and (before is None or not before[0]):
                self.timeline.append(Transition(at, name, "bound", state[0]))
            if state[1] != "Pending" and (before is None or before[1] != state[1]):
                status = pod.get("status") or {}
                detail = str(status.get("reason") or "")
                self.timeline.append(Transition(at, name, state[1], detail))
            if state[2] and (before is None or not before[2]):
                message = unschedulable_condition(pod) or ""
                self.timeline.append(Transition(at, name, "unschedulable", message))
        self.listed = listed
        try:
            self.held_now = held = self.held()
        except Transient:  # a kubelet restarting (scenario f): asked again next poll
            return
        current = double_allocations(listed.values(), held)
        self.double_suspects, lasting = lasting_doubles(self.double_suspects, current, at)
        self.doubles.update(lasting)

    def held(self) -> Allocations:
        """What the kubelets hold for the pods as last listed: their allocation records
        and, for Running pods, the DRA devices of their claims (tests/e2e/dra.py)."""
        held = self.deployment.allocations(self.listed.values())
        if not self.scenario.needs_claims:
            return held
        return with_claims(held, self.listed.values(), self.claims)

    def see_events(self, events: list[dict[str, Any]]) -> None:
        """Keep the namespace's events; put each event about a pod on the timeline when
        first seen (the scheduler's reports, binds and evictions, the kubelets'
        rejections). An event's own timestamps have only second resolution."""
        self.events = events
        self.events_at = at = self.now()
        for e in events:
            key = str((e.get("metadata") or {}).get("uid") or "")
            involved = e.get("involvedObject") or {}
            if key in self.seen_events or involved.get("kind") != "Pod":
                continue
            self.seen_events.add(key)
            source = e.get("source") or {}
            who = source.get("component") or e.get("reportingComponent") or "?"
            self.timeline.append(
                Transition(
                    round(at, 2),
                    str(involved.get("name") or ""),
                    f"event {e.get('reason') or ''}",
                    f"{who}: {e.get('message') or ''}",
                )
            )

    def sleep_polling(self, seconds: float) -> None:
        """Wait ``seconds``, polling meanwhile."""
        deadline = time.monotonic() + seconds
        while True:
            self.poll()
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(POLL_S, left))

    def wait(self, done: Callable[[], bool], *, timeout: float, what: str) -> bool:
        """Poll until ``done()``; False (and a note) after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll()
            if done():
                return True
            time.sleep(POLL_S)
        self.notes.append(f"{self.now():.1f} s: gave up waiting for {what} after {timeout:.0f} s")
        return False

    # ---- steps -------------------------------------------------------------------------

    def submit(self, templates: tuple[PodTemplate, ...]) -> None:
        for template in templates:
            if template.delay_s:
                self.sleep_polling(template.delay_s)
            node = template.node
            claim = f"{template.name}-claim" if template.claims else None
            if claim is not None:
                create_claim(
                    self.kube,
                    resource_claim(
                        claim,
                        namespace=self.namespace,
                        gpus=template.dra_gpus,
                        cpus=template.dra_cpus,
                        same_numa_node=template.same_numa_node,
                        labels=self.deployment.pod_scheduling.claim_labels,
                        template=template.claim_template,
                    ),
                )
            pod = workload_pod(
                template.name,
                namespace=self.namespace,
                deployment=self.deployment,
                cpu=template.cpu,
                memory=template.memory,
                gpus=template.gpus,
                guaranteed=template.guaranteed,
                run_duration=template.run_duration,
                # A deployment's profiles are named as the Nodes that run them.
                node=self.deployment.profiles[node].name if node is not None else None,
                claim=claim,
                claim_template=template.claim_template,
            )
            create(self.kube, pod)
            self.manifests.append(pod)
            at = self.now()
            if node is None and self.first_submit is None:
                self.first_submit = at
            self.submitted.add(template.name)
            self.timeline.append(
                Transition(round(at, 2), template.name, "submitted", _shape(template))
            )

    def step(self, step: Step) -> None:
        timeout = self.scenario.step_timeout_s
        if isinstance(step, Submit):
            self.submit(step.pods)
        elif isinstance(step, AwaitDecided):
            self.wait(
                lambda: self.decided(step.pod),
                timeout=timeout,
                what=f"the scheduler to bind {step.pod} or report it unplaceable",
            )
        elif isinstance(step, AwaitBound):
            self.wait(
                lambda: sum(1 for p in self.listed.values() if node_of(p)) >= step.count,
                timeout=timeout,
                what=f"{step.count} pods bound",
            )
        elif isinstance(step, AwaitBaseline):
            if not self.wait(
                lambda: self.baseline(step.pods), timeout=timeout, what="the baseline"
            ):
                raise AssertionError(
                    f"the harness did not reach the baseline of scenario {self.scenario.id} "
                    f"({', '.join(step.pods)} running, observed, in the NRT) in {timeout} s\n"
                    + self.deployment.diagnostics()
                )
        elif isinstance(step, KillController):
            self.deployment.kill_controller()
            self.timeline.append(Transition(round(self.now(), 2), "", "controller killed"))
        elif isinstance(step, RestartController):
            self.deployment.restart_controller()
            self.timeline.append(Transition(round(self.now(), 2), "", "controller restarted"))

    def decided(self, name: str) -> bool:
        pod = self.listed.get(name)
        if pod is None:
            return False
        return bool(
            node_of(pod) or scheduler_messages(pod, scheduler_reports(self.events, self.reasons))
        )

    def baseline(self, names: tuple[str, ...]) -> bool:
        listed = self.listed
        if not all(n in listed and phase(listed[n]) == "Running" for n in names):
            return False
        if self.variant.exporter and not all(
            OBSERVED_MEMORY_GROUPS in annotations_of(listed[n]) for n in names
        ):
            return False
        held = self.held_now
        if held is None:  # not answered at this poll: not yet
            return False
        return all(
            nrt_converged(self.kube, p, listed.values(), held) for p in self.deployment.profiles
        )

    # ---- settling ----------------------------------------------------------------------

    def settled(self) -> bool:
        reports = scheduler_reports(self.events, self.reasons)
        unbound_reported = True
        has_unbound = False
        for name in self.submitted - self.deleted.keys():
            pod = self.listed.get(name)
            if pod is None:
                return False
            bound, now_phase = node_of(pod), phase(pod)
            finishes = _finishes(self.scenario, name)
            if bound and now_phase == "Pending":
                return False  # the kubelet has not decided yet
            if bound and finishes and now_phase not in TERMINAL:
                return False
            if not bound:
                has_unbound = True
                unbound_reported &= bool(scheduler_messages(pod, reports))
        if not has_unbound:
            return True
        quiet = self.now() - self.last_change
        # The adapter's quiet_s: by then the scheduler has tried such a pod again (its
        # backoff, its view's resync); plus the NRT lag it may be waiting out.
        window = self.deployment.scheduler.quiet_s + lag_bound_s(self.variant)
        if unbound_reported and quiet >= window:
            return True
        return quiet >= max(SILENT_S, window)

    def reads_misalignment(self) -> bool:
        """Whether the exporters' report of misaligned pods is read (and held to the
        truth): with the exporter, in a scenario whose pods use ResourceClaims."""
        return self.variant.exporter and self.scenario.needs_claims

    def misaligned_metric(self) -> frozenset[str] | None:
        if not self.reads_misalignment():
            return None
        if not isinstance(self.deployment, ExporterMetrics):
            raise AssertionError(
                f"scenario {self.scenario.id} reads the exporters' metrics, which this "
                "backend does not serve to the harness (the local control plane does)"
            )
        return frozenset(metric_misaligned(self.deployment.exporter_metrics(), self.namespace))

    def misaligned_events(self) -> frozenset[str] | None:
        if not self.reads_misalignment():
            return None
        return frozenset(reported_misaligned(self.events))

    def converge(self) -> tuple[list[str], list[str]]:
        """Wait for the exporter's annotations and misalignment reports, and the NRTs; what
        did not catch up."""
        deadline = time.monotonic() + CONVERGE_S + lag_bound_s(self.variant)
        profiles = {p.name: p for p in self.deployment.profiles}
        while True:
            self.poll()
            held = self.held_now
            if held is None:  # not answered at this poll: asked again until the deadline
                if time.monotonic() >= deadline:
                    raise AssertionError("podresources did not answer by the convergence deadline")
                time.sleep(POLL_S)
                continue
            observed: list[str] = []
            if self.variant.exporter:
                observed = observation_mismatches(self.listed.values(), profiles, held)
            reported = True
            if self.reads_misalignment():
                with contextlib.suppress(Transient):
                    self.see_events(_events(self.kube, self.namespace))
                truth = frozenset(misaligned_pods(self.listed.values(), profiles, held))
                reported = self.misaligned_metric() == truth == self.misaligned_events()
            try:
                stale = [
                    p.name
                    for p in self.deployment.profiles
                    if not nrt_converged(self.kube, p, self.listed.values(), held)
                ]
            except Transient:
                stale = ["(API busy)"]
            if (not observed and not stale and reported) or time.monotonic() >= deadline:
                return observed, stale
            time.sleep(POLL_S)


def _finishes(scenario: Scenario, name: str) -> bool:
    return any(p.name == name and p.run_duration for p in scenario.pods)


def _shape(t: PodTemplate) -> str:
    parts = [f"cpu {t.cpu}", f"memory {t.memory}"]
    if t.gpus:
        parts.append(f"{t.gpus} GPU")
    if not t.guaranteed:
        parts.append("Burstable")
    if t.run_duration:
        parts.append(f"runs {t.run_duration}")
    if t.node is not None:
        parts.append(f"bound to node {t.node} without a scheduler")
    return ", ".join(parts)


def _events(kube: KubeClient, namespace: str) -> list[dict[str, Any]]:
    items, _ = kube.list_all(path("api", "v1", "namespaces", namespace, "events"), what="events")
    return items


def drive(
    scenario: Scenario,
    deployment: Deployment,
    *,
    kube: KubeClient,
    namespace: str,
    variant: Variant | None = None,
) -> Outcome:
    """Run ``scenario``'s steps on ``deployment`` (started, with
    :func:`topology_for` ``(scenario, variant)``) in ``namespace``; wait until it settles
    and the harness caught up; return what happened."""
    variant = variant or scenario.default_variant
    run = _Run(scenario, deployment, kube, namespace, variant)
    for step in scenario.steps:
        run.step(step)
    settled = run.wait(
        run.settled,
        timeout=scenario.settle_timeout_s,
        what="the run to settle",
    )
    duration = run.now()
    observed, stale = run.converge()
    run.see_events(_events(kube, namespace))
    timeline = sorted(run.timeline, key=lambda t: t.at_s)
    listed = run.listed
    held = run.held()
    profiles = {p.name: p for p in deployment.profiles}
    misaligned = {
        pod: tuple(how) for pod, how in misaligned_pods(listed.values(), profiles, held).items()
    }
    metric, events = run.misaligned_metric(), run.misaligned_events()
    return Outcome(
        scenario=scenario.id,
        variant=variant,
        pods=listed,
        workload=scenario.workload,
        prebound=scenario.prebound,
        allocations=held,
        events=tuple(run.events),
        timeline=tuple(timeline),
        first_submit_s=run.first_submit,
        profiles=deployment.profiles,
        settled=settled,
        duration_s=round(duration, 1),
        double_allocations=tuple(sorted(run.doubles)),
        observation_mismatches=tuple(observed),
        nrt_mismatches=tuple(stale),
        notes=tuple(run.notes),
        deleted={n: deleted_as_seen(p, run.events) for n, p in run.deleted.items()},
        report_reasons=run.reasons,
        manifests=tuple(run.manifests),
        misaligned=misaligned,
        misaligned_metric=metric,
        misaligned_events=events,
    )
