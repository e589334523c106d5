"""The scheduler adapter interface: everything the harness needs to know to run one
scheduler (in one of its modes) against fake NUMA nodes.

An adapter is a value: it says how the scheduler is built, which processes start it
(command lines with placeholders), the files they read, what the cluster needs installed
first, what the scheduler's pods carry, what it needs from the fake nodes, whether it
writes a predicted placement, how it reports a pod it cannot place, and which of the
properties the scenarios check it is held to. The harness (tests/e2e) does the I/O.

A scheduler's module in this package exports ``ADAPTERS``, one :class:`Adapter` per mode
(docs/schedulers/README.md).
"""

from __future__ import annotations

import enum
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: The placeholders a command line, an environment value or a file template may use.
PLACEHOLDERS = (
    "kubeconfig",
    "scheduler_name",
    "node_selector",
    "node_selector_key",
    "node_selector_value",
    "workdir",
    "bin",
    "here",
    "topology_policy",
    "topology_policy:SPELLING",
    "port:NAME",
)
_PLACEHOLDER = re.compile(r"\{([a-z_]+)(?::([A-Za-z0-9_.-]+))?\}")
#: Default of :attr:`Unschedulable.reason`: what a NUMA-aware scheduler's message names.
NUMA_REASON = r"(?i)numa|topology|align"
#: ``{topology_policy:SPELLING}``: a Topology Manager policy as another project spells it.
#: ``koordinator``: the ``NUMATopologyPolicy`` of Koordinator's node label and pod spec
#: (``apis/extension/numa_aware.go``; ``""`` is its None).
POLICY_SPELLINGS: Mapping[str, Mapping[str, str]] = {
    "koordinator": {
        "none": "",
        "best-effort": "BestEffort",
        "restricted": "Restricted",
        "single-numa-node": "SingleNUMANode",
    },
}


class Claim(enum.StrEnum):
    """A scheduler property the scenarios can check. An adapter's ``claims`` are asserted;
    the others are recorded as findings (docs/schedulers/README.md)."""

    #: Without NRT lag, every pod it binds is admitted (no TopologyAffinityError) and
    #: every pod some zone can hold runs where the scenario says (scenarios a, b, c, e, g),
    #: and with DRA devices on the NUMA nodes of its CPUs and memory (i, j, k).
    ALIGNED = "aligned"
    #: Under NRT lag (scenario d) it sends no pod the kubelet rejects, and every pod runs.
    LAG_SAFE = "lag-safe"
    #: A pod no zone of any node can hold stays Pending and unbound, and the scheduler
    #: says why in the pod's ``PodScheduled`` condition or an event (scenarios a, b).
    REPORTS_UNSCHEDULABLE = "reports-unschedulable"
    #: Where it writes ``kai.scheduler/numa-placement-predicted`` (and the memory groups),
    #: the prediction equals what the kubelet allocated.
    EXACT_PREDICTION = "exact-prediction"


@dataclass(frozen=True, kw_only=True)
class Build:
    """How the scheduler's binaries are built: a script that builds them on first use,
    caches them by version under ``~/.cache/numa-testkit`` and prints the directory
    holding them as the last line of its standard output (progress goes to stderr). A
    warm run only prints the directory."""

    #: The script (run with no arguments, from the repository's root).
    script: Path
    #: An environment variable that, when set, names the binaries' directory instead
    #: (the script is not run), e.g. ``NUMA_TESTKIT_CONTROLPLANE_BIN``.
    override_env: str | None = None
    #: One line for the build's progress message and the docs: what it builds.
    summary: str = ""


@dataclass(frozen=True, kw_only=True)
class Component:
    """One process of the scheduler (the scheduler itself, or a companion such as a
    binder). Started in the order given, each in its own process group, after the fake
    nodes are Ready; stopped in reverse order with SIGTERM, then SIGKILL after
    ``stop_grace_s`` (some schedulers ignore SIGTERM while they wait for the API
    server)."""

    #: Short name for logs (``scheduler``, ``binder``...).
    name: str
    #: The command line (shell words, each a template: see :data:`PLACEHOLDERS`).
    command: str
    #: Extra environment variables (values are templates). ``KUBECONFIG`` and
    #: ``NODE_NAME`` of the harness's own environment are never passed on.
    env: Mapping[str, str] = field(default_factory=dict)
    #: Seconds between SIGTERM and SIGKILL.
    stop_grace_s: float = 10.0
    #: A URL (template) that answers 2xx once the component serves (e.g. a health
    #: endpoint on ``{port:health}``); TLS certificates are not verified. None: the
    #: component counts as started once it runs.
    ready_url: str | None = None
    #: A regular expression the component's log output matches once it serves.
    ready_log: str | None = None


@dataclass(frozen=True, kw_only=True)
class Unschedulable:
    """How the scheduler reports a pod it cannot place. The harness accepts either form:
    the pod's ``PodScheduled`` condition with status ``False`` and reason
    ``Unschedulable`` whose message matches ``reason``, or an event on the pod with one of
    ``event_reasons`` whose message matches ``reason``."""

    #: What the message says when no node can align the pod (a regular expression,
    #: searched, not matched from the start).
    reason: str = NUMA_REASON
    #: Event reasons that report the pod unschedulable (kube-scheduler and the reference
    #: scheduler write ``FailedScheduling``, KAI ``Unschedulable``).
    event_reasons: tuple[str, ...] = ("FailedScheduling", "Unschedulable")


@dataclass(frozen=True, kw_only=True)
class Adapter:
    """One scheduler in one mode, as the harness runs it."""

    #: The scheduler (the family of modes), e.g. ``kai``; also the name users pick it by.
    scheduler: str
    #: The mode, e.g. ``reconstruction``; empty for a scheduler with one mode.
    mode: str = ""
    #: Whether the scenarios that run one mode per scheduler run this one.
    default: bool = True
    #: One line: what this is.
    summary: str = ""
    #: The ``spec.schedulerName`` its pods carry. Unless ``fixed_name``, every deployment
    #: appends its own suffix (``{scheduler_name}`` is the result), so scenarios running at
    #: the same time never share a scheduler.
    scheduler_name: str
    fixed_name: bool = False
    #: A component acts on the whole cluster, not only on the deployment's pods and nodes
    #: (KAI's binder reconciles every BindRequest): two deployments of this scheduler, in
    #: any of its modes, never run at once (the scorecard runs them one after another).
    one_per_cluster: bool = False
    #: The processes that make up the scheduler, started in this order.
    components: tuple[Component, ...]
    #: Files written into ``{workdir}`` before the components start: name -> template text,
    #: or the path of a template file (relative paths: beside the adapter's module). A name
    #: may be in a subdirectory (``conf/scheduler.conf``: a scheduler that reloads on any
    #: change in its configuration's directory must not share it with the logs).
    files: Mapping[str, str | Path] = field(default_factory=dict)
    #: How its binaries are built (``{bin}``); None: nothing to build.
    build: Build | None = None
    #: What the cluster needs before it starts - CRDs, queues, RBAC: YAML files or
    #: directories of them (templates are not expanded; ``{bin}`` and ``{here}`` are, in
    #: the path), applied once per cluster (created if missing) and left in place.
    install: tuple[str, ...] = ()
    #: Objects of one deployment - e.g. KAI's queues, labelled for its node pool: YAML
    #: templates (placeholders expanded; name -> text, or a template file's ``Path``)
    #: created after ``install`` and before the components, deleted when it stops.
    objects: tuple[str | Path, ...] = ()
    #: Labels every fake node gets (a node's own win), e.g. a NUMA policy label the
    #: scheduler reads. Values are templates of ``{topology_policy}`` /
    #: ``{topology_policy:SPELLING}`` only: each node's own policy.
    node_labels: Mapping[str, str] = field(default_factory=dict)
    #: Labels and annotations (values are templates) every pod of the scheduler carries,
    #: e.g. a queue.
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    pod_annotations: Mapping[str, str] = field(default_factory=dict)
    #: Labels (values are templates) every ResourceClaim made for its pods carries, as
    #: the scheduler requires of a user's claims: KAI schedules a pod whose standalone
    #: GPU claim carries the pod's queue label, else reports it unschedulable.
    claim_labels: Mapping[str, str] = field(default_factory=dict)
    #: Profile ``nrt:`` keys (docs/profiles.md) every fake node gets, to match what the
    #: scheduler expects of NRT (e.g. ``fingerprintTerminatedPods: true``).
    nrt: Mapping[str, object] = field(default_factory=dict)
    #: ``fakenrt controller`` options the scheduler needs of the simulated kubelets (e.g.
    #: another topology object they should publish besides NRT v1alpha2, for a scheduler
    #: that reads its own; docs/controller.md), added after the scenario's.
    controller_args: tuple[str, ...] = ()
    #: Whether it writes ``kai.scheduler/numa-placement-predicted`` on the pods it binds.
    predicts_placement: bool = False
    #: Whether it allocates ResourceClaims (Dynamic Resource Allocation: structured
    #: parameters, ``matchAttribute`` constraints) and reserves them for the pods it binds,
    #: as kube-scheduler's DynamicResources plugin does. The DRA scenarios (i, j, k) run
    #: only for such a scheduler; for the others they are not applicable.
    allocates_claims: bool = False
    #: How it reports a pod it cannot place.
    unschedulable: Unschedulable = field(default_factory=Unschedulable)
    #: The properties the scenarios assert for it; the others are findings.
    claims: frozenset[Claim] = frozenset()
    #: How long nothing may change - no pod bound, started or finished - before a
    #: scenario takes its outcome as final: at least the time the scheduler takes to try
    #: again a pod it reported unschedulable (its backoff, its view's resync).
    quiet_s: float = 15.0
    #: A mode known to trust NRT however old: scenario d asserts that the harness catches
    #: it (TopologyAffinityErrors > 0).
    trusts_stale_nrt: bool = False
    #: Its instances share cluster-wide state they would fight over (Volcano: every
    #: scheduler takes every PodGroup and queue, whatever its name): deployments of it on
    #: one cluster run one at a time (scenarios of other schedulers go on meanwhile).
    exclusive: bool = False
    #: The reference scheduler only: its plugin arguments (``args.yaml``). An in-cluster
    #: backend (Kind) runs the harness's scheduler Deployment with them instead of the
    #: components; None: the components run as local processes there too.
    in_cluster_args: str | None = None
    #: The directory of the adapter's module (``{here}``; relative file paths).
    here: Path = field(default_factory=Path)

    @property
    def id(self) -> str:
        """``<scheduler>-<mode>``, or ``<scheduler>`` for a scheduler with one mode."""
        return f"{self.scheduler}-{self.mode}" if self.mode else self.scheduler

    def name_for(self, deployment: str) -> str:
        """The ``spec.schedulerName`` of its pods in ``deployment``."""
        return self.scheduler_name if self.fixed_name else f"{self.scheduler_name}-{deployment}"

    def check(self) -> None:
        """Raise ValueError naming the adapter and the field for a malformed adapter (an
        unknown placeholder, a bad regular expression, no components)."""
        where = f"scheduler adapter {self.id!r}"
        if not self.components:
            raise ValueError(f"{where}: no components")
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", self.id):
            raise ValueError(f"{where}: scheduler and mode must be lowercase words joined by -")
        try:
            re.compile(self.unschedulable.reason)
        except re.error as exc:
            raise ValueError(f"{where}: unschedulable.reason: {exc}") from None
        probe = Placeholders.example()
        for c in self.components:
            argv(c.command, probe, where=f"{where}, component {c.name!r}, command")
            for key, value in c.env.items():
                expand(value, probe, where=f"{where}, component {c.name!r}, env {key}")
            for url in (c.ready_url,):
                if url is not None:
                    expand(url, probe, where=f"{where}, component {c.name!r}, ready_url")
        for name in self.files:
            parts = Path(name).parts
            if not parts or Path(name).is_absolute() or ".." in parts:
                raise ValueError(f"{where}, file {name!r}: must be a path inside {{workdir}}")
            expand(self.file_text(name), probe, where=f"{where}, file {name!r}")
        for i, path in enumerate(self.install):
            expand(path, probe, where=f"{where}, install[{i}]")
        for i, template in enumerate(self.objects):
            expand(self.template_text(template), probe, where=f"{where}, objects[{i}]")
        for key, value in {**self.pod_labels, **self.pod_annotations}.items():
            expand(value, probe, where=f"{where}, pod label/annotation {key}")
        for key, value in self.claim_labels.items():
            expand(value, probe, where=f"{where}, claim label {key}")
        for key, value in self.node_labels.items():
            node_label(value, "none", where=f"{where}, node label {key}")

    def file_text(self, name: str) -> str:
        """The template text of ``files[name]`` (read from disk for a path)."""
        return self.template_text(self.files[name])

    def template_text(self, source: str | Path) -> str:
        """A template given inline, or the text of its file (relative: beside the module)."""
        if isinstance(source, Path):
            return (source if source.is_absolute() else self.here / source).read_text()
        return source


@dataclass(frozen=True, kw_only=True)
class Placeholders:
    """The values a deployment fills in (docs/schedulers/README.md)."""

    kubeconfig: Path
    scheduler_name: str
    #: ``<key>=<value>``: a label only the deployment's fake nodes carry.
    node_selector_key: str
    node_selector_value: str
    workdir: Path
    #: The build's binaries directory (None: the adapter builds nothing).
    bin: Path | None
    here: Path
    #: A free port per name, the same for every use of the name in one deployment.
    port: Callable[[str], int]
    #: The Topology Manager policy of the deployment's fake nodes (the first node's when
    #: they differ), for schedulers whose pods must name the policy they are aligned under.
    topology_policy: str = ""

    @property
    def node_selector(self) -> str:
        return f"{self.node_selector_key}={self.node_selector_value}"

    @staticmethod
    def example() -> Placeholders:
        """Values for checking templates without running anything."""
        return Placeholders(
            kubeconfig=Path("/kubeconfig"),
            scheduler_name="scheduler",
            node_selector_key="fakenrt.io/controller",
            node_selector_value="e2e",
            workdir=Path("/workdir"),
            bin=Path("/bin"),
            here=Path("/here"),
            port=lambda _name: 1,
            topology_policy="single-numa-node",
        )


def expand(template: str, values: Placeholders, *, where: str) -> str:
    """``template`` with every ``{placeholder}`` filled in; ValueError naming ``where`` for
    an unknown one (text in braces that is not a lowercase word, such as YAML's ``{}`` or
    ``{a: b}``, is left alone)."""

    def one(match: re.Match[str]) -> str:
        name, arg = match.group(1), match.group(2)
        if name == "port" and arg:
            return str(values.port(arg))
        if name == "topology_policy":
            return spell_policy(values.topology_policy, arg, where=where)
        if arg is None and name in PLACEHOLDERS and name != "bin":
            return str(getattr(values, name))
        if name == "bin" and arg is None:
            if values.bin is None:
                raise ValueError(f"{where}: {{bin}} used but the adapter has no build")
            return str(values.bin)
        known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
        raise ValueError(f"{where}: unknown placeholder {match.group(0)}; use {known}")

    return _PLACEHOLDER.sub(one, template)


def spell_policy(policy: str, spelling: str | None, *, where: str) -> str:
    """A Topology Manager policy (the kubelet's spelling) as ``spelling`` writes it (None:
    as is); ValueError naming ``where`` for an unknown spelling."""
    if spelling is None:
        return policy
    if spelling not in POLICY_SPELLINGS:
        known = ", ".join(POLICY_SPELLINGS)
        raise ValueError(f"{where}: unknown policy spelling {spelling!r}; use {known}")
    return POLICY_SPELLINGS[spelling].get(policy, policy)


def node_label(template: str, policy: str, *, where: str) -> str:
    """A node label value: ``template`` with ``{topology_policy}`` (or a spelling of it) of
    the node's own ``policy``; any other placeholder is refused (a node label is per
    node, the deployment's values are not known there)."""

    def one(match: re.Match[str]) -> str:
        if match.group(1) == "topology_policy":
            return spell_policy(policy, match.group(2), where=where)
        raise ValueError(
            f"{where}: {match.group(0)}: node labels may use {{topology_policy}} or "
            "{topology_policy:SPELLING} only"
        )

    return _PLACEHOLDER.sub(one, template)


def argv(command: str, values: Placeholders, *, where: str) -> list[str]:
    """The command's arguments with the placeholders filled in, each argument on its own
    (a path with spaces stays one argument)."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    if not words:
        raise ValueError(f"{where}: empty command")
    return [expand(word, values, where=where) for word in words]
