"""Runs scorecard cells on a cluster, several at once, and writes the scorecard. I/O.

Each cell gets its own namespace, fake nodes (their own controller name) and scheduler
instance (its own ``schedulerName``), so cells share nothing but the API server and run
concurrently: ``jobs`` at a time, the longest first - except the cells of a scheduler
that acts on the whole cluster (``one_per_cluster``, e.g. KAI's binder) or of an adapter
with a fixed scheduler name, which run one after another (started first: theirs is the
longest chain). A cell the harness cannot run (a component that does not start, a baseline
never reached) becomes a record with the error as a harness problem; the others go on.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import NotFound, Transient
from schedulers.adapter import Adapter
from tests.e2e.cluster import unique
from tests.e2e.deployment import Deployment, Topology
from tests.e2e.driver import drive, topology_for
from tests.e2e.scenarios import SCENARIOS
from tests.scorecard.assertions import Verdict, judge
from tests.scorecard.matrix import Cell
from tests.scorecard.records import (
    FORMAT,
    failed_record,
    matrix_row,
    not_applicable_record,
    record,
)
from tests.scorecard.report import render

#: (topology, scheduler, controller name) -> a deployment not started yet.
Backend = Callable[[Topology, Adapter, str], Deployment]
#: Cell -> the command that reruns it.
Rerun = Callable[[Cell], str]
_ERROR_CHARS = 6000


def _expected_seconds(cell: Cell) -> float:
    """A rough length, to start the longest cells first (a cell not applicable: none)."""
    if cell.not_applicable is not None:
        return 0.0
    return float(cell.scenario.parameters.get("churn_seconds", 0)) + cell.scenario.settle_timeout_s


def _await(kube: KubeClient, url_path: str, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(NotFound, Transient):
            kube.get(url_path, what=what)
            return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"no {what} after {timeout:.0f} s: is kube-controller-manager running?"
            )
        time.sleep(0.2)


@contextlib.contextmanager
def _namespace(kube: KubeClient, *, timeout: float = 60.0) -> Iterator[str]:
    """A fresh namespace, once the controller-manager has made its ``default``
    ServiceAccount and ``kube-root-ca.crt`` (as in any cluster); its pods and itself
    deleted afterwards."""
    name = f"sc-{uuid.uuid4().hex[:10]}"
    kube.create(path("api", "v1", "namespaces"), {"metadata": {"name": name}}, what="namespace")
    ns = ("api", "v1", "namespaces", name)
    _await(kube, path(*ns, "serviceaccounts", "default"), f"ServiceAccount {name}/default", timeout)
    _await(kube, path(*ns, "configmaps", "kube-root-ca.crt"), f"{name}/kube-root-ca.crt", timeout)
    try:
        yield name
    finally:
        with contextlib.suppress(NotFound, Transient):
            kube.request(
                "DELETE",
                path("api", "v1", "namespaces", name, "pods"),
                what="delete the cell's pods",
                query={"gracePeriodSeconds": "0"},
            )
        with contextlib.suppress(NotFound, Transient):
            kube.delete(path("api", "v1", "namespaces", name))


def run_cell(
    cell: Cell,
    *,
    kube: KubeClient,
    backend: Backend,
    rerun: Rerun,
    live: dict[int, Deployment] | None = None,
) -> dict[str, Any]:
    """One cell, from its deployment's start to its record; the deployment is in ``live``
    while it runs (so an interrupted run can stop it)."""
    command = rerun(cell)
    if cell.not_applicable is not None:
        return not_applicable_record(cell, cell.not_applicable, command=command)
    deployment: Deployment | None = None
    live = live if live is not None else {}
    try:
        with _namespace(kube) as namespace:
            deployment = backend(
                topology_for(cell.scenario, cell.variant), cell.scheduler, unique("sc")
            )
            live[id(deployment)] = deployment
            try:
                deployment.start()
                outcome = drive(
                    cell.scenario, deployment, kube=kube, namespace=namespace, variant=cell.variant
                )
                topology = getattr(deployment, "topology", None)
                nodes = list(topology.nodes) if isinstance(topology, Topology) else []
                return record(
                    cell, outcome, command=command, nodes=nodes, manifests=outcome.manifests
                )
            finally:
                live.pop(id(deployment), None)
                with contextlib.suppress(Exception):
                    deployment.stop()
    except Exception as exc:  # the harness failed in this cell: recorded, others go on
        text = f"{type(exc).__name__}: {exc}"
        return failed_record(cell, text[:_ERROR_CHARS], command=command)


def exclusion(cell: Cell) -> str | None:
    """The group of cells that never run at the same time as this one: every cell of a
    scheduler that acts on the whole cluster (``one_per_cluster``: any of its modes), or
    of an adapter with a fixed scheduler name; None: it runs beside anything (a cell not
    applicable runs nothing)."""
    if cell.not_applicable is not None:
        return None
    if cell.scheduler.one_per_cluster:
        return f"scheduler {cell.scheduler.scheduler}"
    if cell.scheduler.fixed_name:
        return f"adapter {cell.scheduler.id}"
    return None


@dataclass(frozen=True)
class Cluster:
    """Where cells run: an admin client of the API server and how deployments are made
    there."""

    kube: KubeClient
    backend: Backend


def dispatch_order(cells: Sequence[Cell], *, clusters: int = 1) -> list[int]:
    """The order cells are started in: the cells of exclusion groups first, the group with
    the longest chain first (its cells run one after another on each of ``clusters``),
    then the others, each the longest first."""
    chain: dict[str | None, float] = {}
    for cell in cells:
        group = exclusion(cell)
        chain[group] = chain.get(group, 0.0) + _expected_seconds(cell) / max(1, clusters)

    def key(i: int) -> tuple[int, float, float]:
        group = exclusion(cells[i])
        return (group is None, -chain[group] if group else 0.0, -_expected_seconds(cells[i]))

    return sorted(range(len(cells)), key=key)


def run_cells(
    cells: Sequence[Cell],
    *,
    clusters: Sequence[Cluster],
    rerun: Rerun,
    jobs: int,
    progress: TextIO | None = None,
) -> list[dict[str, Any]]:
    """Every cell, ``jobs`` at a time over ``clusters``, never two of one exclusion group at
    once on one cluster (a cell without a group goes to the least busy cluster); the
    records in the cells' order."""
    if not clusters:
        raise ValueError("run_cells needs at least one cluster")
    pending = dispatch_order(cells, clusters=len(clusters))
    busy: set[tuple[int, str]] = set()
    running = [0] * len(clusters)
    results: dict[int, dict[str, Any]] = {}
    cond = threading.Condition()
    start = time.monotonic()
    live: dict[int, Deployment] = {}

    def place(i: int) -> int | None:
        """The cluster cell ``i`` may start on now, if any."""
        group = exclusion(cells[i])
        free = [c for c in range(len(clusters)) if group is None or (c, group) not in busy]
        return min(free, key=lambda c: running[c]) if free else None

    def take() -> tuple[int, int] | None:
        """The next cell that may start now and its cluster (waits while every pending one
        is blocked by its group); None when nothing is left."""
        with cond:
            while pending:
                for i in pending:
                    where = place(i)
                    if where is not None:
                        pending.remove(i)
                        group = exclusion(cells[i])
                        if group is not None:
                            busy.add((where, group))
                        running[where] += 1
                        return i, where
                cond.wait()
            return None

    def worker() -> None:
        while (taken := take()) is not None:
            i, where = taken
            cell, cluster = cells[i], clusters[where]
            rec = run_cell(cell, kube=cluster.kube, backend=cluster.backend, rerun=rerun, live=live)
            with cond:
                results[i] = rec
                group = exclusion(cell)
                if group is not None:
                    busy.discard((where, group))
                running[where] -= 1
                cond.notify_all()
                if progress is not None:
                    print(
                        f"[{len(results)}/{len(cells)} {time.monotonic() - start:5.0f} s] "
                        f"{cell.id}: {one_line(rec)}",
                        file=progress,
                        flush=True,
                    )

    threads = [
        threading.Thread(target=worker, name=f"cell-{n}", daemon=True)
        for n in range(max(1, min(jobs, len(cells))))
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except BaseException:  # interrupted (SIGINT, SIGTERM): leave no component running
        with cond:
            pending.clear()
        for deployment in list(live.values()):
            with contextlib.suppress(Exception):
                deployment.stop()
        raise
    return [results[i] for i in range(len(cells))]


def one_line(rec: Mapping[str, Any]) -> str:
    """A record in a few words, for progress lines and the text table."""
    if "not_applicable" in rec:
        return f"not applicable: {rec['not_applicable']}"
    if "submitted" not in rec:
        error = (rec.get("harness_problems") or {}).get("error") or ["?"]
        return f"did not run: {str(error[0]).splitlines()[0][:200]}"
    line = (
        f"errors={rec['topology_affinity_errors']} ran={rec['running']}/{rec['submitted']} "
        f"pending={rec['pending']} in {rec['seconds']} s"
    )
    if rec.get("prediction_agreement") is not None:
        line += f" predicted-zones-right={rec['prediction_agreement']}"
    if rec.get("misaligned") is not None:
        line += f" misaligned={rec['misaligned']}"
    if not rec.get("settled", True):
        line += " (did not settle)"
    return line


def text_table(records: Sequence[Mapping[str, Any]]) -> str:
    """The matrix as text: TopologyAffinityErrors / ran / submitted per scheduler and
    variant row (``default``: each scenario's default variant) and scenario (columns),
    then ``m`` and the misaligned pods where the exporter's report of them is read (the
    DRA scenarios); ``-`` where the harness could not run the cell, ``n/a`` where the
    scheduler cannot be asked the scenario's question."""
    scenarios = [s for s in SCENARIOS if any(r.get("scenario") == s for r in records)]
    rows = list(dict.fromkeys((str(r.get("scheduler")), matrix_row(r)) for r in records))
    by_key = {(r.get("scheduler"), matrix_row(r), r.get("scenario")): r for r in records}
    width = max([len(f"{s} {v}") for s, v in rows] + [10])
    lines = [f"{'scheduler variant':<{width}}  " + "  ".join(f"{s:>9}" for s in scenarios)]
    for scheduler, row in rows:
        cells = []
        for s in scenarios:
            rec = by_key.get((scheduler, row, s))
            if rec is None:
                cells.append(f"{'':>9}")
            elif "not_applicable" in rec:
                cells.append(f"{'n/a':>9}")
            elif "submitted" not in rec:
                cells.append(f"{'-':>9}")
            else:
                value = f"{rec['topology_affinity_errors']}/{rec['running']}/{rec['submitted']}"
                if rec.get("misaligned") is not None:
                    value += f" m{rec['misaligned']}"
                cells.append(f"{value:>9}")
        lines.append(f"{scheduler + ' ' + row:<{width}}  " + "  ".join(cells))
    return "\n".join(lines)


def write(
    out: Path,
    records: Sequence[Mapping[str, Any]],
    adapters: Sequence[Adapter],
    *,
    facts: Mapping[str, str],
    complete: bool = True,
    title: str = "NUMA scheduling scorecard",
) -> list[Verdict]:
    """Judge ``records`` (``complete``: a whole matrix, so missing cells fail their
    assertions); write ``out/scorecard.json`` and ``out/scorecard.html``."""
    verdicts = judge(records, adapters, complete=complete)
    out.mkdir(parents=True, exist_ok=True)
    document = {
        "format": FORMAT,
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "facts": dict(facts),
        "assertions": [asdict(v) for v in verdicts],
        "records": list(records),
    }
    (out / "scorecard.json").write_text(json.dumps(document, indent=1, sort_keys=False) + "\n")
    (out / "scorecard.html").write_text(render(records, verdicts, title=title, facts=facts))
    return verdicts
