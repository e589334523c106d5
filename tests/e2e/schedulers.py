"""The scheduler under test, as the harness runs it: adapters (``schedulers/``, docs/
schedulers/README.md) picked on the command line, and one adapter's components running
for one deployment.

``--scheduler NAME`` picks adapters by name (default: the reference scheduler);
``--scheduler-name`` / ``--scheduler-command`` / ``--scheduler-reason`` make an adapter of
any scheduler a user starts from a command line (docs/e2e.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import re
import signal
import socket
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest
import yaml
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from schedulers import registry
from schedulers.adapter import (
    PLACEHOLDERS,
    Adapter,
    Claim,
    Component,
    Placeholders,
    Unschedulable,
    argv,
    expand,
)
from schedulers.building import binaries
from schedulers.reference import FAKENRT, RECONSTRUCTION, STALE_NRT
from tests.e2e.processes import Process, harness_env

__all__ = ["FAKENRT", "RECONSTRUCTION", "STALE_NRT", "SchedulerRun", "chosen", "from_options"]

#: The label on a deployment's fake nodes whose value is the deployment's name.
CONTROLLER_LABEL = "fakenrt.io/controller"
#: How long a component may take to answer its readiness check.
READY_TIMEOUT_S = 120.0
#: What a user's ad-hoc scheduler is held to unless --scheduler-claims says otherwise.
CUSTOM_CLAIMS = frozenset({Claim.ALIGNED, Claim.LAG_SAFE, Claim.REPORTS_UNSCHEDULABLE})


def add_options(parser: pytest.Parser) -> None:
    """The e2e suite's command-line options (registered by tests/conftest.py)."""
    group = parser.getgroup("e2e", "end-to-end scenarios (tests/e2e, docs/e2e.md)")
    group.addoption(
        "--scheduler",
        action="append",
        default=None,
        metavar="NAME",
        help="Scheduler adapter(s) to run the e2e scenarios against (schedulers/, "
        "docs/schedulers/README.md): a scheduler (its default mode; every mode in the "
        "scenarios that compare modes), one adapter by id (e.g. kai-trust-nrt), or all; "
        "repeat or separate with commas (default: reference).",
    )
    group.addoption(
        "--scheduler-name",
        default=None,
        help="spec.schedulerName of the e2e test pods; with --scheduler-command, an ad-hoc "
        "scheduler under test (run alone unless --scheduler is given too).",
    )
    group.addoption(
        "--scheduler-command",
        default=None,
        help="Command line starting the ad-hoc scheduler under test; placeholders "
        + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
        + ".",
    )
    group.addoption(
        "--scheduler-reason",
        default=r"(?i)numa|topology|align",
        help="Regex the ad-hoc scheduler's message matches (PodScheduled condition or "
        "FailedScheduling / Unschedulable event) when no node can align a pod.",
    )
    group.addoption(
        "--scheduler-claims",
        default=",".join(sorted(CUSTOM_CLAIMS)),
        help="What the scenarios assert of the ad-hoc scheduler, comma-separated, or none "
        f"(of {', '.join(c.value for c in Claim)}); the rest are reported as findings.",
    )


def from_options(
    *, name: str | None, command: str | None, reason: str, claims: str | None = None
) -> Adapter | None:
    """The ad-hoc adapter the options describe, or None when neither name nor command is
    given. Raises pytest.UsageError for one without the other, an empty one, a reason
    that is not a regular expression, an unknown claim or a bad placeholder."""
    if name is None and command is None:
        return None
    if not name or not command:
        raise pytest.UsageError("--scheduler-name and --scheduler-command go together")
    try:
        re.compile(reason)
    except re.error as exc:
        raise pytest.UsageError(f"--scheduler-reason {reason!r}: {exc}") from None
    asserted = CUSTOM_CLAIMS if claims is None else _claims(claims)
    adapter = Adapter(
        scheduler="custom",
        mode=re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "scheduler",
        summary=f"the scheduler --scheduler-command starts, as {name}",
        scheduler_name=name,
        fixed_name=True,
        components=(Component(name="scheduler", command=command, stop_grace_s=20.0),),
        unschedulable=Unschedulable(reason=reason),
        claims=asserted,
    )
    try:
        adapter.check()
    except ValueError as exc:
        raise pytest.UsageError(f"--scheduler-command: {exc}") from None
    return adapter


def _claims(text: str) -> frozenset[Claim]:
    if text.strip() == "none":
        return frozenset()
    try:
        return frozenset(Claim(c.strip()) for c in text.split(",") if c.strip())
    except ValueError as exc:
        known = ", ".join(c.value for c in Claim)
        raise pytest.UsageError(f"--scheduler-claims: {exc}; use {known} or none") from None


def chosen(config: pytest.Config, *, every_mode: bool) -> tuple[Adapter, ...]:
    """The adapters the command line picks for a scenario (every mode of each scheduler for
    scenarios that compare modes). Raises pytest.UsageError for an unknown name."""
    custom = from_options(
        name=config.getoption("--scheduler-name"),
        command=config.getoption("--scheduler-command"),
        reason=config.getoption("--scheduler-reason"),
        claims=config.getoption("--scheduler-claims"),
    )
    given: list[str] | None = config.getoption("--scheduler")
    names = [n.strip() for g in given or () for n in g.split(",") if n.strip()]
    if not names and custom is None:
        names = ["reference"]
    try:
        picked = registry.select(names, every_mode=every_mode)
    except ValueError as exc:
        raise pytest.UsageError(f"--scheduler: {exc}") from None
    return (*picked, custom) if custom is not None else picked


# ---- installing what a scheduler needs ------------------------------------------------

_installed: set[tuple[str, Path]] = set()


def install(kubeconfig: Path, sources: Iterable[Path]) -> None:
    """Apply the YAML files (or directories of them, sorted) to the cluster of
    ``kubeconfig``, once per cluster and source (:func:`apply`)."""
    todo = [s for s in sources if (str(kubeconfig), s) not in _installed]
    if not todo:
        return
    docs: list[dict[str, Any]] = []
    for source in todo:
        files = sorted(source.glob("*.yaml")) if source.is_dir() else [source]
        if not files:
            raise AssertionError(f"install: {source} has no YAML files")
        for file in files:
            docs.extend(d for d in yaml.safe_load_all(file.read_text()) if d)
    apply(kubeconfig, docs)
    _installed.update((str(kubeconfig), s) for s in todo)


def apply(kubeconfig: Path, docs: list[dict[str, Any]], *, timeout: float = 60.0) -> None:
    """Create ``docs`` in the cluster of ``kubeconfig``: CRDs first, each Established
    before the rest; an object that exists is left as it is. Any kind the API serves
    (the dynamic client's discovery)."""
    crds = [d for d in docs if d.get("kind") == "CustomResourceDefinition"]
    ordered = crds + [d for d in docs if d.get("kind") != "CustomResourceDefinition"]
    deadline = time.monotonic() + timeout
    with _dynamic(kubeconfig) as dynamic:
        for doc in ordered:
            resource = _resource(dynamic, doc, deadline)
            try:
                resource.create(body=doc, namespace=doc["metadata"].get("namespace"))
            except ApiException as exc:
                if exc.status != 409:
                    raise AssertionError(f"creating {_what(doc)}: {exc.reason}") from None
            if doc.get("kind") == "CustomResourceDefinition":
                _wait_established(resource, doc["metadata"]["name"], deadline)


def delete(kubeconfig: Path, docs: list[dict[str, Any]]) -> None:
    """Delete ``docs`` (last first) from the cluster of ``kubeconfig``; gone ones are fine."""
    with _dynamic(kubeconfig) as dynamic:
        for doc in reversed(docs):
            resource = _resource(dynamic, doc, time.monotonic())
            try:
                resource.delete(
                    name=doc["metadata"]["name"], namespace=doc["metadata"].get("namespace")
                )
            except ApiException as exc:
                if exc.status != 404:
                    raise AssertionError(f"deleting {_what(doc)}: {exc.reason}") from None


@contextlib.contextmanager
def _dynamic(kubeconfig: Path) -> Iterator[Any]:
    api = kube_config.new_client_from_config(config_file=str(kubeconfig))
    try:
        yield DynamicClient(api)
    finally:
        api.close()


def _what(doc: Mapping[str, Any]) -> str:
    return f"{doc.get('kind')} {(doc.get('metadata') or {}).get('name')}"


def _resource(dynamic: Any, doc: Mapping[str, Any], deadline: float) -> Any:
    """The API resource serving ``doc``'s kind (a CRD just made: discovery lags)."""
    while True:
        try:
            return dynamic.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        except ResourceNotFoundError:
            if time.monotonic() > deadline:
                raise AssertionError(f"no API serves {_what(doc)}") from None
            dynamic.resources.invalidate_cache()
            time.sleep(0.5)


def _wait_established(crds: Any, name: str, deadline: float) -> None:
    while True:
        status = crds.get(name=name).to_dict().get("status") or {}
        if any(
            c["type"] == "Established" and c["status"] == "True"
            for c in status.get("conditions") or []
        ):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"CRD {name} not Established")
        time.sleep(0.2)


# ---- one adapter's components for one deployment --------------------------------------


@dataclass(frozen=True)
class PodScheduling:
    """What a deployment's workload pods carry for its scheduler."""

    scheduler_name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    #: Labels of the ResourceClaims made for those pods.
    claim_labels: Mapping[str, str] = field(default_factory=dict)


@dataclass
class SchedulerRun:
    """An adapter's components as local processes for the deployment ``controller_name``
    (whose fake nodes carry ``fakenrt.io/controller=<controller_name>``)."""

    adapter: Adapter
    kubeconfig: Path
    controller_name: str
    workdir: Path
    processes: list[Process] = field(default_factory=list)
    #: The deployment's own objects (``Adapter.objects``), created by :meth:`start`.
    objects: list[dict[str, Any]] = field(default_factory=list)
    #: The Topology Manager policy of the deployment's nodes (``{topology_policy}``).
    topology_policy: str = ""
    _ports: dict[str, int] = field(default_factory=dict)
    _values: Placeholders | None = None
    _lock: IO[str] | None = None

    @property
    def values(self) -> Placeholders:
        if self._values is None:
            self._values = Placeholders(
                kubeconfig=self.kubeconfig,
                scheduler_name=self.adapter.name_for(self.controller_name),
                node_selector_key=CONTROLLER_LABEL,
                node_selector_value=self.controller_name,
                workdir=self.workdir,
                bin=binaries(self.adapter.build) if self.adapter.build else None,
                here=self.adapter.here,
                port=self._port,
                topology_policy=self.topology_policy,
            )
        return self._values

    def _port(self, name: str) -> int:
        if name not in self._ports:
            self._ports[name] = free_port()
        return self._ports[name]

    @property
    def pod_scheduling(self) -> PodScheduling:
        return pod_scheduling(self.adapter, self.controller_name, self.values)

    def acquire(self) -> None:
        """For an ``exclusive`` adapter, wait until no other deployment of its scheduler
        runs on this cluster (a lock file per cluster and scheduler, held until
        :meth:`release`: across threads and processes alike); for others, nothing."""
        if not self.adapter.exclusive or self._lock is not None:
            return
        lock = exclusive_lock(self.adapter, self.kubeconfig).open("a")
        fcntl.flock(lock, fcntl.LOCK_EX)
        self._lock = lock

    def release(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def install(self) -> None:
        """What the scheduler needs in the cluster (once per cluster)."""
        values = self.values
        install(
            self.kubeconfig,
            [
                _resolve(expand(s, values, where=f"{self.adapter.id} install"), self.adapter)
                for s in self.adapter.install
            ],
        )

    def start(self) -> None:
        """Install, create the deployment's objects, write the files, start each component
        and wait until it serves."""
        self.install()
        values = self.values
        for i, source in enumerate(self.adapter.objects):
            where = f"{self.adapter.id} objects[{i}]"
            text = expand(self.adapter.template_text(source), values, where=where)
            docs = [d for d in yaml.safe_load_all(text) if d]
            self.objects.extend(docs)
            apply(self.kubeconfig, docs)
        self.workdir.mkdir(parents=True, exist_ok=True)
        for name in self.adapter.files:
            text = expand(self.adapter.file_text(name), values, where=f"file {name}")
            (self.workdir / name).parent.mkdir(parents=True, exist_ok=True)
            (self.workdir / name).write_text(text)
        for component in self.adapter.components:
            where = f"{self.adapter.id} {component.name}"
            env = harness_env()
            env.update({k: expand(v, values, where=where) for k, v in component.env.items()})
            process = Process(
                f"{self.adapter.id} {component.name}",
                argv(component.command, values, where=where),
                self.workdir / f"{component.name}.log",
                grace_s=component.stop_grace_s,
            )
            process.start(env)
            self.processes.append(process)
            self._wait_serving(component, process)

    def _wait_serving(self, component: Component, process: Process) -> None:
        url = (
            expand(component.ready_url, self.values, where="ready_url")
            if component.ready_url
            else None
        )
        pattern = re.compile(component.ready_log) if component.ready_log else None
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            self.check_alive()
            if (url is None or _answers(url)) and (
                pattern is None or pattern.search(process.output())
            ):
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{process.name} did not become ready within {READY_TIMEOUT_S:.0f}s "
                    f"({url or ''} {component.ready_log or ''})\n{self.diagnostics()}"
                )
            time.sleep(0.2)

    def check_alive(self) -> None:
        for process in self.processes:
            if process.exited():
                raise AssertionError(f"{process.name} exited\n{self.diagnostics()}")

    def signal_stop(self) -> None:
        """SIGTERM to every component, last started first (see :meth:`wait`)."""
        for process in reversed(self.processes):
            process.signal(signal.SIGTERM)

    def wait(self) -> None:
        """Until every component has exited; SIGKILL after each one's grace period."""
        for process in reversed(self.processes):
            process.wait()

    def stop(self) -> None:
        self.signal_stop()
        self.wait()
        self.remove_objects()

    def remove_objects(self) -> None:
        """Delete the deployment's objects (after the components stopped)."""
        if self.objects:
            delete(self.kubeconfig, self.objects)
            self.objects.clear()

    def diagnostics(self) -> str:
        return "\n".join(p.tail() for p in self.processes)


def exclusive_lock(adapter: Adapter, kubeconfig: Path) -> Path:
    """The lock file of ``adapter``'s scheduler on the cluster of ``kubeconfig``."""
    key = hashlib.sha256(str(kubeconfig.resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"numa-testkit-{adapter.scheduler}-{key}.lock"


def pod_scheduling(adapter: Adapter, deployment: str, values: Placeholders) -> PodScheduling:
    """The scheduler name, labels and annotations of ``adapter``'s pods in ``deployment``."""
    return PodScheduling(
        scheduler_name=adapter.name_for(deployment),
        labels={
            k: expand(v, values, where=f"pod label {k}") for k, v in adapter.pod_labels.items()
        },
        annotations={
            k: expand(v, values, where=f"pod annotation {k}")
            for k, v in adapter.pod_annotations.items()
        },
        claim_labels={
            k: expand(v, values, where=f"claim label {k}") for k, v in adapter.claim_labels.items()
        },
    )


def _resolve(path: str, adapter: Adapter) -> Path:
    p = Path(path)
    return p if p.is_absolute() else adapter.here / p


def _answers(url: str) -> bool:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=2, context=ctx) as resp:
            return 200 <= int(resp.status) < 300
    except (urllib.error.URLError, OSError):
        return False


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
