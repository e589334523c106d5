"""Every input of every command, made hostile (issue 21, item 4): inputs x commands.

The walk of both command lines (tests/cli_tree.py) finds every option; each is classified
below by what it reads (a YAML file, a name, seconds, an address, ...), and a test fails
when an option is not. Each input class has its hostile values (tests/inputs/hostile.py);
every (command, option, value) runs the real console script, with the command's other
arguments valid, under CPU and memory limits, and must be refused: non-zero exit, one
line on stderr starting with ``Error:`` that names the option (or the environment
variable, or the file), a bounded quote, no traceback.

Not here: ``--kubeconfig`` and what a kubeconfig leads to (token files, exec plugins) are
bounded by the Kubernetes client (issue 21's client swap); boolean flags take no value.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli_tree import scripts
from tests.inputs import hostile as h
from tests.inputs.hostile import Hostile

REPO = Path(__file__).resolve().parents[2]

PROFILE = """\
nodes:
- name: n
  kubelet: {topologyManagerPolicy: single-numa-node, reservedSystemCPUs: "0",
            memoryManagerPolicy: None}
  shape: {numaNodes: 2, coresPerNumaNode: 2, memoryPerNumaNode: 4Gi,
          devicesPerNumaNode: {nvidia.com/gpu: 1}}
"""
DRA_PROFILE = """\
nodes:
- name: n
  kubelet: {topologyManagerPolicy: single-numa-node, reservedSystemCPUs: "0"}
  shape: {numaNodes: 2, coresPerNumaNode: 2, memoryPerNumaNode: 4Gi,
          draDevicesPerNumaNode: {gpu.nvidia.com: 1}}
"""
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  containers:
  - name: c
    image: x
    resources: {limits: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}}
"""
KUBELET_CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
topologyManagerPolicy: single-numa-node
"""
TRACE = """\
pods:
- at: 0s
  duration: 1m
  pod:
    metadata: {name: t, namespace: ml}
    spec:
      containers:
      - name: c
        resources: {limits: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}}
"""
KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Valid inputs for every command's other arguments, and the hostile files."""
    d = tmp_path_factory.mktemp("inputs")
    (d / "profile.yaml").write_text(PROFILE)
    (d / "pod.yaml").write_text(POD)
    (d / "kubelet.yaml").write_text(KUBELET_CONFIG)
    (d / "trace.yaml").write_text(TRACE)
    (d / "kubeconfig.yaml").write_text(KUBECONFIG)
    (d / "args.yaml").write_text("reconstructAvailable: true\n")
    nrt = h.run(["fakenrt", "nrt", "render", "--profile", str(d / "profile.yaml")])
    assert nrt.returncode == 0, nrt.stderr
    (d / "nrt.yaml").write_text(nrt.stdout)
    node0 = d / "sys" / "devices" / "system" / "node" / "node0"
    node0.mkdir(parents=True)
    (node0 / "cpulist").write_text("0-3\n")
    (d / "out").mkdir()
    (d / "plugins").mkdir()
    (d / "dra-profile.yaml").write_text(DRA_PROFILE)
    (d / "registry").mkdir()
    (d / "cdi").mkdir()
    (d / "hostile").mkdir()
    return d


@dataclass(frozen=True)
class Command:
    """A leaf command and the valid arguments it runs with (``{d}``: the inputs);
    ``conflicts``: options left out when a given one is tested (it excludes them)."""

    argv: tuple[str, ...]
    base: tuple[tuple[str, str | None], ...]
    conflicts: tuple[tuple[str, str], ...] = ()
    #: arguments an option is only read with (its companion options)
    companions: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def args(self, d: Path, replaced: str) -> list[str]:
        out = list(self.argv)
        for tested, extra in self.companions:
            if tested == replaced:
                out.extend(extra)
        dropped = {replaced, *(other for tested, other in self.conflicts if tested == replaced)}
        for option, value in self.base:
            if option in dropped:
                continue
            out.append(option)
            if value is not None:
                out.append(value.format(d=d, repo=REPO))
        return out


COMMANDS = {
    "fakenrt simulate": Command(
        ("fakenrt", "simulate"),
        (
            ("--profiles", "{d}/profile.yaml"),
            ("--trace", "{d}/trace.yaml"),
            ("--strategy", "oracle"),
            ("--no-progress", None),
        ),
        conflicts=(("--mix", "--trace"), ("--arrivals-per-hour", "--trace")),
        companions=(("--address", ("--executor", "dask")),),
    ),
    "fakenrt kubelet explain": Command(
        ("fakenrt", "kubelet", "explain"),
        (("--profile", "{d}/profile.yaml"), ("--pod", "{d}/pod.yaml")),
    ),
    "fakenrt nrt render": Command(
        ("fakenrt", "nrt", "render"), (("--profile", "{d}/profile.yaml"), ("--pod", "{d}/pod.yaml"))
    ),
    "fakenrt nrt publish": Command(
        ("fakenrt", "nrt", "publish"),
        (
            ("--node", "n"),
            ("--podresources-socket", "{d}/kubelet.sock"),
            ("--sysfs-root", "{d}/sys"),
            ("--kubelet-config", "{d}/kubelet.yaml"),
            ("--kubeconfig", "{d}/kubeconfig.yaml"),
        ),
    ),
    "fakenrt controller": Command(
        ("fakenrt", "controller"),
        (("--kubeconfig", "{d}/kubeconfig.yaml"), ("--profile", "{d}/profile.yaml")),
    ),
    "fakenrt scheduler evaluate": Command(
        ("fakenrt", "scheduler", "evaluate"),
        (("--nrt", "{d}/nrt.yaml"), ("--pod", "{d}/pod.yaml")),
    ),
    "fakenrt scheduler run": Command(
        ("fakenrt", "scheduler", "run"), (("--kubeconfig", "{d}/kubeconfig.yaml"),)
    ),
    "fakenrt harness exporters": Command(
        ("fakenrt", "harness", "exporters"),
        (
            ("--profile", "{d}/profile.yaml"),
            ("--daemonset", "{repo}/manifests/exporter/daemonset.yaml"),
        ),
    ),
    "fakenrt device-plugin": Command(
        ("fakenrt", "device-plugin"),
        (("--profile", "{d}/profile.yaml"), ("--dir", "{d}/plugins"), ("--register-timeout", "1")),
    ),
    "fakenrt dra-plugin": Command(
        ("fakenrt", "dra-plugin"),
        (
            ("--profile", "{d}/dra-profile.yaml"),
            ("--plugins-dir", "{d}/plugins"),
            ("--registry-dir", "{d}/registry"),
            ("--cdi-dir", "{d}/cdi"),
            ("--kubeconfig", "{d}/kubeconfig.yaml"),
            ("--register-timeout", "1"),
        ),
    ),
    "fakenrt realnode render": Command(
        ("fakenrt", "realnode", "render"),
        (("--profile", "{d}/profile.yaml"), ("--out", "{d}/out")),
    ),
    "numa-exporter run": Command(
        ("numa-exporter", "run"),
        (
            ("--node-name", "n"),
            ("--podresources-socket", "{d}/kubelet.sock"),
            ("--sysfs-root", "{d}/sys"),
            ("--kubeconfig", "{d}/kubeconfig.yaml"),
            ("--metrics-bind-address", "127.0.0.1:0"),
        ),
    ),
    "numa-exporter observe": Command(
        ("numa-exporter", "observe"),
        (
            ("--podresources-socket", "{d}/kubelet.sock"),
            ("--sysfs-root", "{d}/sys"),
            ("--json", None),
        ),
    ),
}

NOT_INPUTS = "flag"  # booleans: no value to make hostile
CLIENT = "kubeconfig"  # bounded by the Kubernetes client (issue 21's client swap)

#: Every option of every command: the input class it reads.
OPTIONS: dict[tuple[str, str], str] = {
    # fakenrt simulate
    ("fakenrt simulate", "--scenario"): "file",
    ("fakenrt simulate", "--profiles"): "file",
    ("fakenrt simulate", "--trace"): "file",
    ("fakenrt simulate", "--mix"): "spec",
    ("fakenrt simulate", "--arrivals-per-hour"): "seconds",
    ("fakenrt simulate", "--duration"): "seconds",
    ("fakenrt simulate", "--nrt-delay"): "seconds",
    ("fakenrt simulate", "--nrt-jitter"): "seconds",
    ("fakenrt simulate", "--exporter-delay"): "seconds",
    ("fakenrt simulate", "--period"): "seconds",
    ("fakenrt simulate", "--requeue"): NOT_INPUTS,
    ("fakenrt simulate", "--max-requeues"): "integer",
    ("fakenrt simulate", "--seed"): "integer",
    ("fakenrt simulate", "--strategy"): "choice",
    ("fakenrt simulate", "--score"): "choice",
    ("fakenrt simulate", "--sweep"): "spec",
    ("fakenrt simulate", "--seeds"): "integer",
    ("fakenrt simulate", "--rejections"): "output-file",
    ("fakenrt simulate", "--executor"): "choice",
    ("fakenrt simulate", "--address"): "dask-address",
    ("fakenrt simulate", "--json"): NOT_INPUTS,
    ("fakenrt simulate", "--dra"): NOT_INPUTS,
    ("fakenrt simulate", "--report"): "output-file",
    ("fakenrt simulate", "--jobs"): "integer",
    ("fakenrt simulate", "--progress"): NOT_INPUTS,
    # fakenrt kubelet explain
    ("fakenrt kubelet explain", "--profile"): "file",
    ("fakenrt kubelet explain", "--node"): "name",
    ("fakenrt kubelet explain", "--pod"): "file",
    ("fakenrt kubelet explain", "--json"): NOT_INPUTS,
    ("fakenrt kubelet explain", "-v"): NOT_INPUTS,
    # fakenrt nrt render
    ("fakenrt nrt render", "--profile"): "file",
    ("fakenrt nrt render", "--node"): "name",
    ("fakenrt nrt render", "--pod"): "file",
    ("fakenrt nrt render", "--pods-out"): "output-file",
    ("fakenrt nrt render", "--json"): NOT_INPUTS,
    # fakenrt nrt publish
    ("fakenrt nrt publish", "--node"): "name",
    ("fakenrt nrt publish", "--podresources-socket"): "socket",
    ("fakenrt nrt publish", "--sysfs-root"): "sysfs",
    ("fakenrt nrt publish", "--kubelet-config"): "file",
    ("fakenrt nrt publish", "--kubeconfig"): CLIENT,
    ("fakenrt nrt publish", "--delay"): "seconds",
    ("fakenrt nrt publish", "--jitter"): "seconds",
    ("fakenrt nrt publish", "--seed"): "integer",
    ("fakenrt nrt publish", "--poll-interval"): "seconds",
    ("fakenrt nrt publish", "--health-bind-address"): "address",
    ("fakenrt nrt publish", "--resync-interval"): "seconds",
    ("fakenrt nrt publish", "--topology-policies"): NOT_INPUTS,
    ("fakenrt nrt publish", "--log-level"): "choice",
    # fakenrt controller
    ("fakenrt controller", "--kubeconfig"): CLIENT,
    ("fakenrt controller", "--profile"): "file",
    ("fakenrt controller", "--state-dir"): "output-dir",
    ("fakenrt controller", "--controller-name"): "name",
    ("fakenrt controller", "--seed"): "integer",
    ("fakenrt controller", "--nrt-delay"): "seconds",
    ("fakenrt controller", "--nrt-jitter"): "seconds",
    ("fakenrt controller", "--nrt-fingerprint-terminated-pods"): NOT_INPUTS,
    ("fakenrt controller", "--nrt-topology-policies"): NOT_INPUTS,
    ("fakenrt controller", "--nrt-volcano"): NOT_INPUTS,
    ("fakenrt controller", "--nrt-koordlet"): NOT_INPUTS,
    ("fakenrt controller", "--nrt-refresh"): "seconds",
    ("fakenrt controller", "--start-delay"): "seconds",
    ("fakenrt controller", "--default-run-duration"): "seconds",
    ("fakenrt controller", "--taint"): NOT_INPUTS,
    ("fakenrt controller", "--lease-duration"): "integer",
    ("fakenrt controller", "--lease-renew-interval"): "seconds",
    ("fakenrt controller", "--node-status-interval"): "seconds",
    ("fakenrt controller", "--workers"): "integer",
    ("fakenrt controller", "--remove-nodes"): NOT_INPUTS,
    ("fakenrt controller", "--remove-on-exit"): NOT_INPUTS,
    ("fakenrt controller", "--metrics-bind-address"): "address",
    ("fakenrt controller", "--log-level"): "choice",
    # fakenrt scheduler evaluate
    ("fakenrt scheduler evaluate", "--nrt"): "file",
    ("fakenrt scheduler evaluate", "--pod"): "file",
    ("fakenrt scheduler evaluate", "--pods-on-node"): "file",
    ("fakenrt scheduler evaluate", "--args"): "file",
    ("fakenrt scheduler evaluate", "--json"): NOT_INPUTS,
    # fakenrt scheduler run
    ("fakenrt scheduler run", "--kubeconfig"): CLIENT,
    ("fakenrt scheduler run", "--scheduler-name"): "name",
    ("fakenrt scheduler run", "--args"): "file",
    ("fakenrt scheduler run", "--node-selector"): "spec",
    ("fakenrt scheduler run", "--period"): "seconds",
    ("fakenrt scheduler run", "--metrics-port"): "integer",
    ("fakenrt scheduler run", "--once"): NOT_INPUTS,
    ("fakenrt scheduler run", "-v"): NOT_INPUTS,
    # fakenrt harness exporters
    ("fakenrt harness exporters", "--profile"): "file",
    ("fakenrt harness exporters", "--daemonset"): "file",
    ("fakenrt harness exporters", "--state-dir"): "path-text",
    ("fakenrt harness exporters", "--namespace"): "name",
    ("fakenrt harness exporters", "--service-account"): "name",
    # fakenrt device-plugin
    ("fakenrt device-plugin", "--profile"): "file",
    ("fakenrt device-plugin", "--node"): "name",
    ("fakenrt device-plugin", "--resource"): "name",
    ("fakenrt device-plugin", "--dir"): "output-dir",
    ("fakenrt device-plugin", "--register-timeout"): "seconds",
    # fakenrt dra-plugin
    ("fakenrt dra-plugin", "--profile"): "file",
    ("fakenrt dra-plugin", "--node"): "name",
    ("fakenrt dra-plugin", "--node-name"): "name",
    ("fakenrt dra-plugin", "--driver"): "name",
    ("fakenrt dra-plugin", "--plugins-dir"): "output-dir",
    ("fakenrt dra-plugin", "--registry-dir"): "output-dir",
    ("fakenrt dra-plugin", "--cdi-dir"): "output-dir",
    ("fakenrt dra-plugin", "--kubeconfig"): CLIENT,
    ("fakenrt dra-plugin", "--register-timeout"): "seconds",
    ("fakenrt dra-plugin", "--publish"): NOT_INPUTS,
    # fakenrt realnode render
    ("fakenrt realnode render", "--profile"): "file",
    ("fakenrt realnode render", "--node"): "name",
    ("fakenrt realnode render", "--out"): "output-dir",
    ("fakenrt realnode render", "--cluster"): "name",
    ("fakenrt realnode render", "--image"): "image",
    # numa-exporter run (each also from its environment variable)
    ("numa-exporter run", "--node-name"): "name",
    ("numa-exporter run", "--podresources-socket"): "socket",
    ("numa-exporter run", "--sysfs-root"): "sysfs",
    ("numa-exporter run", "--poll-interval"): "seconds",
    ("numa-exporter run", "--metrics-bind-address"): "address",
    ("numa-exporter run", "--kubeconfig"): CLIENT,
    ("numa-exporter run", "--rpc-timeout"): "seconds",
    ("numa-exporter run", "--write-concurrency"): "integer",
    ("numa-exporter run", "--log-level"): "choice",
    # numa-exporter observe
    ("numa-exporter observe", "--podresources-socket"): "socket",
    ("numa-exporter observe", "--sysfs-root"): "sysfs",
    ("numa-exporter observe", "--kubeconfig"): CLIENT,
    ("numa-exporter observe", "--node-name"): "name",
    ("numa-exporter observe", "--pod"): "pod-ref",
    ("numa-exporter observe", "--rpc-timeout"): "seconds",
    ("numa-exporter observe", "--json"): NOT_INPUTS,
}

#: The environment variables numa-exporter run reads, by option.
EXPORTER_ENV = {
    "--node-name": "NODE_NAME",
    "--podresources-socket": "PODRESOURCES_SOCKET",
    "--sysfs-root": "SYSFS_ROOT",
    "--poll-interval": "POLL_INTERVAL",
    "--metrics-bind-address": "METRICS_BIND_ADDRESS",
    "--rpc-timeout": "PODRESOURCES_TIMEOUT",
    "--write-concurrency": "WRITE_CONCURRENCY",
    "--log-level": "LOG_LEVEL",
}
#: The environment variables the daemons read, by (command, option).
ENV = {
    ("fakenrt nrt publish", "--node"): "NODE_NAME",
    **{("numa-exporter run", option): name for option, name in EXPORTER_ENV.items()},
}

_SOCKETS = [
    Hostile("directory", str, "{option}"),
    Hostile("too-long", lambda d: str(d / ("s" * 120) / "kubelet.sock"), "{option}"),
]
_SYSFS = [
    Hostile("missing", h._in("no-such-sys"), "{value}"),
    Hostile("a-file", h._const("/dev/null"), "/dev/null"),
    Hostile("too-long", lambda d: str(d / ("x" * 5000)), "{option}"),
]
_SPECS = [
    Hostile("garbage", h._const("=,=,=;;"), "{option}"),
    Hostile("10k-characters", h._const("x" * 10_000), "{option}"),
]
_DASK_ADDRESSES = [
    Hostile("garbage", h._const("=,=,=;;"), "{option}"),
    Hostile("other-scheme", h._const("http://scheduler:8786"), "{option}"),
    Hostile("port-too-large", h._const("tcp://scheduler:99999"), "{option}"),
    Hostile("10k-characters", h._const("tcp://" + "h" * 10_000 + ":8786"), "{option}"),
]
_IMAGES = [
    Hostile("empty", h._const(""), "{option}"),
    Hostile("spaces", h._const("Bad Image!"), "{option}"),
    Hostile("10k-characters", h._const("i" * 10_000), "{option}"),
]
_POD_REFS = [
    Hostile("no-slash", h._const("pod"), "{option}"),
    Hostile("bad-name", h._const("ns/Bad_Name!"), "{option}"),
    Hostile("empty-namespace", h._const("/p"), "{option}"),
]
_PATH_TEXT = [
    Hostile("relative", h._const("relative"), "{option}"),
    Hostile("newline", h._const("/a\nb"), "{option}"),
    Hostile("10k-characters", h._const("/" + "x" * 10_000), "{option}"),
]

CLASSES: dict[str, list[Hostile]] = {
    "file": h.FILES,
    "output-file": h.OUTPUT_FILES,
    "output-dir": h.OUTPUT_DIRS,
    "socket": _SOCKETS,
    "sysfs": _SYSFS,
    "name": h.NAMES,
    "seconds": h.SECONDS,
    "integer": h.INTEGERS,
    "address": h.ADDRESSES,
    "choice": h.CHOICES,
    "spec": _SPECS,
    "dask-address": _DASK_ADDRESSES,
    "image": _IMAGES,
    "pod-ref": _POD_REFS,
    "path-text": _PATH_TEXT,
}

#: What a daemon reads again at every poll (the node's files may appear or be fixed
#: later): refused by logging one bounded line naming it while it keeps serving, not by
#: exiting. (command, option) -> the hostile values handled so.
KEPT: dict[tuple[str, str], set[str]] = {
    ("fakenrt nrt publish", "--kubelet-config"): {f.id for f in h.FILES} - {"directory"},
    ("fakenrt nrt publish", "--sysfs-root"): {"missing"},
}

#: Values a class lists that an option of it legitimately takes (not hostile there): a
#: negative seed; /dev/null as "no pods on the node" and as "the default arguments" (an
#: empty file is documented as the defaults); an unwritable --rejections file when the
#: run rejected nothing (the empty JSONL writes no byte, so nothing fails).
ACCEPTED = {
    ("fakenrt simulate", "--rejections", "dev-full"),
    ("fakenrt simulate", "--rejections", "proc"),
    ("fakenrt scheduler evaluate", "--pods-on-node", "dev-null"),
    ("fakenrt scheduler evaluate", "--args", "dev-null"),
    ("fakenrt scheduler run", "--args", "dev-null"),
    ("fakenrt simulate", "--seed", "negative"),
    ("fakenrt nrt publish", "--seed", "negative"),
    ("fakenrt controller", "--seed", "negative"),
}


@dataclass(frozen=True)
class Case:
    command: str
    option: str
    hostile: Hostile
    env: str | None = None

    @property
    def kept(self) -> bool:
        return self.hostile.id in KEPT.get((self.command, self.option), set())

    @property
    def id(self) -> str:
        via = f"${self.env}" if self.env else self.option
        return f"{self.command}:{via}:{self.hostile.id}"


def _cases() -> Iterator[Case]:
    for (command, option), kind in OPTIONS.items():
        if kind in (NOT_INPUTS, CLIENT):
            continue
        for hostile in CLASSES[kind]:
            if (command, option, hostile.id) in ACCEPTED:
                continue
            yield Case(command, option, hostile)
            if (command, option) in ENV:
                yield Case(command, option, hostile, env=ENV[command, option])


CASES = list(_cases())


def test_every_option_of_every_command_is_classified() -> None:
    found = set()
    for script, tree in scripts().items():
        for path, command in tree.walk(script):
            if command.commands:
                continue
            for option in command.options:
                found.add((path, option.names[0]))
    assert found == set(OPTIONS)
    leaves = {c for c, _ in OPTIONS}
    assert leaves <= set(COMMANDS)


def _check(case: Case, inputs: Path) -> tuple[list[str], str]:
    """Run one case; (its problems, its stderr)."""
    command = COMMANDS[case.command]
    value = case.hostile.make(inputs / "hostile")
    argv = command.args(inputs, replaced=case.option)
    env: dict[str, str] = {}
    if case.env:
        env[case.env] = value
        place = case.env
    else:
        argv += [case.option, value]
        place = case.hostile.place.format(option=case.option, value=value)
    place = place if len(place) < 200 else place[:200]
    if case.kept:
        outcome = h.run(argv, env=env, cwd=inputs, stop_when=place)
        return outcome.kept_problems(place), outcome.stderr
    outcome = h.run(argv, env=env, cwd=inputs)
    return outcome.problems(place), outcome.stderr


#: Cases run at once: each is a process under its own limits, and many wait (a FIFO for
#: its 10 s, a daemon watched serving), so they overlap.
PARALLEL = 4


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest, inputs: Path) -> dict[str, tuple[list[str], str]]:
    """The outcome of every selected case, run PARALLEL at a time the first time one is
    asked for (the hostile files are made first, one thread). The cases are the session's:
    make pytest's ``--dist loadfile`` keeps this file on one pytest-xdist worker, which
    runs them once."""
    selected = [
        case
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.originalname == "test_a_hostile_input_is_refused_in_one_line"
        and isinstance(case := item.callspec.params["case"], Case)
    ]
    for case in selected:
        case.hostile.make(inputs / "hostile")
    with ThreadPoolExecutor(PARALLEL) as pool:
        results = pool.map(lambda case: _check(case, inputs), selected)
        return {case.id: result for case, result in zip(selected, results, strict=True)}


# the first case's setup runs them all (about 3.5 min of CPU): past the 300 s per test
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_hostile_input_is_refused_in_one_line(
    case: Case, outcomes: dict[str, tuple[list[str], str]]
) -> None:
    problems, stderr = outcomes[case.id]
    assert not problems, f"{case.id}: {problems}\nstderr: {stderr[:2000]!r}"


def _nrt(inputs: Path, change: Callable[[dict[str, Any]], None]) -> str:
    nrt = yaml.safe_load((inputs / "nrt.yaml").read_text())
    change(nrt)
    return yaml.safe_dump(nrt)


def _more_available(nrt: dict[str, Any]) -> None:
    nrt["zones"][0]["resources"][0]["available"] = "64"


def _unknown_cost(nrt: dict[str, Any]) -> None:
    nrt["zones"][0]["costs"].append({"name": "node-7", "value": 30})


def _pods(count: int, name: str = "p{i}") -> str:
    return "".join(
        f"---\n{POD.replace('name: p,', 'name: ' + name.format(i=i) + ',')}" for i in range(count)
    )


def _profile(nodes: int) -> str:
    return "nodes:\n" + "".join(
        f"- {{name: n{i}, shape: {{numaNodes: 1, coresPerNumaNode: 1, memoryPerNumaNode: 1Gi}}}}\n"
        for i in range(nodes)
    )


@dataclass(frozen=True)
class Content:
    """A file whose content is wrong for what it is, given to one command's option."""

    command: str
    option: str
    id: str
    make: Callable[[Path], str]
    problem: str


CONTENTS = [
    Content(
        "fakenrt scheduler evaluate", "--nrt", "available-above-capacity",
        lambda d: _nrt(d, _more_available), "available 64 is more than allocatable 1",
    ),
    Content(
        "fakenrt scheduler evaluate", "--nrt", "costs-naming-no-zone",
        lambda d: _nrt(d, _unknown_cost), "costs name node-7, which is not a zone of this NRT",
    ),
    Content(
        "fakenrt kubelet explain", "--pod", "pod-named-Bad_Name!",
        lambda d: _pods(1, "Bad_Name!"), "metadata.name: 'Bad_Name!' is not a DNS-1123 subdomain",
    ),
    Content(
        "fakenrt scheduler evaluate", "--pod", "pod-named-Bad_Name!",
        lambda d: _pods(1, "Bad_Name!"), "metadata.name: 'Bad_Name!' is not a DNS-1123 subdomain",
    ),
    Content(
        "fakenrt kubelet explain", "--pod", "2000-pods",
        lambda d: _pods(2000), "2000 pods; fakenrt reads at most 1000",
    ),
    Content(
        "fakenrt scheduler evaluate", "--pods-on-node", "2000-pods",
        lambda d: _pods(2000), "2000 pods; fakenrt reads at most 1000",
    ),
    Content(
        "fakenrt nrt render", "--profile", "6000-nodes",
        lambda d: _profile(6000), "6000 nodes; a profile describes at most 5000",
    ),
    Content(
        "fakenrt kubelet explain", "--profile", "88000-nodes",
        lambda d: _profile(88_000), "more than 500000 YAML values",
    ),
    Content(
        "fakenrt simulate", "--profiles", "88000-nodes",
        lambda d: _profile(88_000), "more than 500000 YAML values",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    "content", CONTENTS, ids=[f"{c.command}:{c.option}:{c.id}" for c in CONTENTS]
)
def test_a_wrong_file_is_refused_naming_it(content: Content, inputs: Path) -> None:
    path = inputs / "hostile" / f"{content.id}.yaml"
    path.write_text(content.make(inputs))
    argv = [
        *COMMANDS[content.command].args(inputs, replaced=content.option),
        content.option,
        str(path),
    ]
    outcome = h.run(argv, cwd=inputs)
    assert not outcome.problems(str(path)), (outcome.problems(str(path)), outcome.stderr[:2000])
    assert content.problem in outcome.stderr


#: How each command ends with only its valid arguments: exit 0, or serving until stopped
#: (a daemon), or a failure that is about reaching the cluster or the kubelet the
#: arguments point to (nothing listens there) - never about an input.
VALID: dict[str, str] = {
    "fakenrt simulate": "exit 0",
    "fakenrt kubelet explain": "exit 0",
    "fakenrt nrt render": "exit 0",
    "fakenrt nrt publish": "serves",
    "fakenrt controller": "Connection refused",
    "fakenrt scheduler evaluate": "exit 0",
    "fakenrt scheduler run": "serves",
    "fakenrt harness exporters": "exit 0",
    "fakenrt device-plugin": "registration with",
    "fakenrt dra-plugin": "Connection refused",
    "fakenrt realnode render": "exit 0",
    "numa-exporter run": "serves",
    "numa-exporter observe": "podresources List failed",
}


#: What a daemon says once it serves (against a cluster and a kubelet nobody runs here).
SERVING = {
    "fakenrt nrt publish": "publishing the NodeResourceTopology",
    "fakenrt scheduler run": "cycle failed",
    "numa-exporter run": "podresources unavailable",
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_valid_arguments_are_accepted(command: str, inputs: Path) -> None:
    """The suite's premise: each refusal above is for the hostile value, since the same
    command with only its valid arguments is not refused."""
    argv = COMMANDS[command].args(inputs, replaced="")
    expected = VALID[command]
    if expected == "serves":
        outcome = h.run(argv, cwd=inputs, stop_when=SERVING[command])
        assert outcome.ran, outcome.stderr[-2000:]
        assert SERVING[command] in outcome.stderr
        assert "Traceback" not in outcome.stderr
    elif expected == "exit 0":
        outcome = h.run(argv, cwd=inputs)
        assert outcome.returncode == 0, outcome.stderr[-2000:]
    else:
        outcome = h.run(argv, cwd=inputs)
        assert outcome.returncode == 1, outcome.stderr[-2000:]
        assert outcome.stderr.startswith("Error: ") and expected in outcome.stderr


def test_the_runner_sees_an_accepted_input() -> None:
    """The check itself: a valid run is not a refusal, a traceback is seen."""
    ok = h.run(["fakenrt", "--help"])
    assert "exit status 0: the input was accepted" in ok.problems("x")
    assert os.environ.get("PATH") is not None
