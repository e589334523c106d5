"""A real Prometheus (Debian's package, run directly) scrapes real `numa-exporter run`
processes - each against a fake kubelet podresources socket and the real API server -
and evaluates the shipped alerting rules; the test reads metrics and alerts through its
HTTP API.

The rules are the shipped numa-exporter.rules.yaml with one change, made by this test:
every `for:` is shortened to FOR_S seconds, so an alert fires within seconds of its
fault instead of minutes (expressions, labels and annotations are the shipped ones; the
full `for:` durations are covered by the promtool unit tests in rules.test.yaml)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from exporter.annotations import OBSERVED_PLACEMENT
from exporter.resources import ContainerResources
from exporter.sysfs import write_fixture
from tests.controlplane.cluster import ControlPlane
from tests.exporter import scenarios as s
from tests.exporter.fake_podresources import FakePodResources
from tests.exporter.kube_helpers import GUARANTEED, annotations_of, create_pod
from tests.prometheus.tools import REPO, RULES_FILE

pytestmark = pytest.mark.controlplane

FOR_S = 2
JOB = "numa-exporter"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(probe: Callable[[], Any], what: str, timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last={last!r}")


def shortened_rules(target: Path) -> Path:
    """The shipped rules with every `for:` set to FOR_S seconds."""
    doc = yaml.safe_load(RULES_FILE.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = f"{FOR_S}s"
    target.write_text(yaml.safe_dump(doc, sort_keys=False))
    return target


@dataclass
class Node:
    """One fake kubelet and the real exporter process watching it."""

    name: str
    kubelet: FakePodResources
    exporter: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def instance(self) -> str:
        return f"127.0.0.1:{self.port}"


class Prometheus:
    def __init__(self, binary: Path, workdir: Path, targets: list[str], rules: Path) -> None:
        self.port = _free_port()
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules)],
            "scrape_configs": [
                {
                    "job_name": JOB,
                    "scrape_timeout": "900ms",
                    "static_configs": [{"targets": targets}],
                }
            ],
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.log = workdir / "prometheus.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    str(binary),
                    f"--config.file={workdir / 'prometheus.yml'}",
                    f"--storage.tsdb.path={workdir / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--log.level=warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def get(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        url = f"http://127.0.0.1:{self.port}{path}{query}"
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.loads(response.read())

    def ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited: {self.log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def query(self, expr: str) -> dict[str, float]:
        """instance -> value of an instant query."""
        result = self.get("/api/v1/query", query=expr)["data"]["result"]
        return {r["metric"].get("instance", ""): float(r["value"][1]) for r in result}

    def alerts(self) -> list[dict[str, Any]]:
        return list(self.get("/api/v1/alerts")["data"]["alerts"])

    def firing(self, name: str) -> list[dict[str, Any]]:
        return [
            a for a in self.alerts() if a["labels"]["alertname"] == name and a["state"] == "firing"
        ]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


@pytest.fixture
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="pm-", dir="/tmp"))  # short unix socket paths
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def nodes(control_plane: ControlPlane, workdir: Path) -> Iterator[list[Node]]:
    """Two fake kubelets, each watched by a real `numa-exporter run` process."""
    started: list[Node] = []
    try:
        for i in range(2):
            name = f"prom-{uuid.uuid4().hex[:8]}"
            sysfs = workdir / f"sys{i}"
            write_fixture(sysfs, {0: "0-7", 1: "8-15"})
            kubelet = FakePodResources(workdir / f"k{i}.sock").start()
            port = _free_port()
            log = workdir / f"exporter{i}.log"
            with log.open("wb") as out:
                exporter = subprocess.Popen(
                    [
                        sys.executable, "-c", "from exporter.cli import main; main()", "run",
                        "--node-name", name,
                        "--podresources-socket", str(kubelet.socket_path),
                        "--sysfs-root", str(sysfs),
                        "--kubeconfig", str(control_plane.kubeconfig),
                        "--metrics-bind-address", f"127.0.0.1:{port}",
                        "--poll-interval", "0.2",
                        "--rpc-timeout", "1",
                    ],
                    cwd=REPO,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )  # fmt: skip
            started.append(Node(name, kubelet, exporter, port, log))
        yield started
    finally:
        for node in started:
            if node.exporter.poll() is None:
                node.exporter.terminate()
                node.exporter.wait(timeout=20)
            node.kubelet.stop()


@pytest.fixture
def prometheus(prometheus_bin: Path, workdir: Path, nodes: list[Node]) -> Iterator[Prometheus]:
    rules = shortened_rules(workdir / "rules.yaml")
    prom = Prometheus(prometheus_bin / "prometheus", workdir, [n.instance for n in nodes], rules)
    try:
        _wait(prom.ready, "prometheus ready")
        yield prom
    finally:
        prom.stop()


def test_shortened_rules_differ_from_the_shipped_ones_only_in_for(tmp_path: Path) -> None:
    shipped = yaml.safe_load(RULES_FILE.read_text())
    derived = yaml.safe_load(shortened_rules(tmp_path / "r.yaml").read_text())
    for a, b in zip(shipped["groups"][0]["rules"], derived["groups"][0]["rules"], strict=True):
        assert {**a, "for": None} == {**b, "for": None}
        assert b["for"] == f"{FOR_S}s"


def test_prometheus_scrapes_every_exporter_and_alerts_on_faults(
    api_client: client.ApiClient,
    namespace: str,
    nodes: list[Node],
    prometheus: Prometheus,
) -> None:
    a, b = nodes
    every = {a.instance, b.instance}

    def scraped() -> dict[str, float] | None:
        up = prometheus.query(f'up{{job="{JOB}"}}')
        return up if set(up) == every else None

    up = _wait(scraped, "both targets scraped")
    assert up == {a.instance: 1.0, b.instance: 1.0}
    targets = prometheus.get("/api/v1/targets")["data"]["activeTargets"]
    assert {t["labels"]["instance"]: t["health"] for t in targets} == {
        a.instance: "up",
        b.instance: "up",
    }
    # One Guaranteed pod on node a with 4 exclusive CPUs: a real annotation write. Created
    # once the exporters serve, so it started while they run (observation lag is timed).
    a.kubelet.set_pods(
        [s.pod("train", ContainerResources("main", cpu_ids=(0, 1, 2, 3)), namespace=namespace)]
    )
    create_pod(api_client, namespace, "train", node=a.name, containers={"main": GUARANTEED})
    _wait(lambda: OBSERVED_PLACEMENT in annotations_of(api_client, namespace, "train"), "train")

    _wait(
        lambda: prometheus.query("numa_exporter_pods_observed") == {a.instance: 1, b.instance: 0},
        "pods observed per node",
    )
    _wait(
        lambda: (
            prometheus.query('numa_exporter_annotation_patches_total{result="applied"}')
            == {a.instance: 1.0}
        ),
        "one applied patch on node a",
    )
    assert prometheus.query("numa_exporter_podresources_up") == {a.instance: 1, b.instance: 1}
    _wait(
        lambda: (
            prometheus.query("numa_exporter_observation_lag_seconds_count")
            == {a.instance: 1.0, b.instance: 0.0}
        ),
        "one observation-lag sample on node a",
    )
    assert set(prometheus.query("numa_exporter_build_info")) == every
    # The rules have been evaluated, and with everything healthy nothing is pending.
    _wait(
        lambda: all(
            r.get("lastEvaluation", "").startswith("2")
            for g in prometheus.get("/api/v1/rules")["data"]["groups"]
            for r in g["rules"]
        ),
        "a rule evaluation",
    )
    time.sleep(FOR_S + 1)
    assert prometheus.alerts() == []

    # Fault 1: node a's kubelet podresources server goes away.
    a.kubelet.stop()
    (errors,) = _wait(
        lambda: prometheus.firing("NumaExporterPodresourcesErrors"), "podresources alert"
    )
    assert errors["labels"] == {
        "alertname": "NumaExporterPodresourcesErrors",
        "severity": "warning",
        "job": JOB,
        "instance": a.instance,
    }
    assert errors["annotations"]["summary"] == (
        f"numa-exporter {a.instance} keeps failing kubelet podresources calls"
    )
    assert prometheus.query("numa_exporter_podresources_up") == {a.instance: 0, b.instance: 1}

    # Fault 2: node b's exporter dies.
    b.exporter.kill()
    b.exporter.wait(timeout=10)
    (down,) = _wait(lambda: prometheus.firing("NumaExporterDown"), "exporter down alert")
    assert down["labels"]["instance"] == b.instance
    assert prometheus.query(f'up{{job="{JOB}"}}') == {a.instance: 1.0, b.instance: 0.0}
    firing = {(x["labels"]["alertname"], x["labels"]["instance"]) for x in prometheus.alerts()}
    assert firing == {
        ("NumaExporterPodresourcesErrors", a.instance),
        ("NumaExporterDown", b.instance),
    }
