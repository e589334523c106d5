"""``python -m tests.scorecard``: run the scorecard and write build/scorecard/ (docs/
scorecard.md). Exits 1 when an assertion fails (findings never fail it), 2 on a usage
error."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from exporter.kubeclient import KubeClient
from exporter.kubesettings import from_kubeconfig
from schedulers import registry
from schedulers.adapter import Adapter
from schedulers.building import BuildError, binaries
from tests.controller.conftest import admin_kube
from tests.controlplane.cluster import ControlPlane, binaries_dir
from tests.controlplane.helpers import admin_client, install_crds
from tests.e2e.deployment import Deployment, ProcessDeployment, Topology
from tests.e2e.scenarios import SCENARIOS
from tests.e2e.schedulers import SchedulerRun
from tests.e2e.variants import VARIANTS, parse_variant
from tests.scorecard import assertions, matrix
from tests.scorecard.matrix import Cell
from tests.scorecard.runner import Cluster, run_cells, text_table, write

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "build" / "scorecard"
#: Cells at once on the local control plane: measured on 2 cores (docs/scorecard.md).
DEFAULT_JOBS = 4
#: Control planes of the full matrix: KAI's cells (one at a time per cluster) are its
#: longest chain.
DEFAULT_FULL_CLUSTERS = 3
TARGETS = {"ci": "scorecard-ci", "full": "scorecard", "kind": "scorecard-kind"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tests.scorecard",
        description="Run the e2e scenarios against scheduler adapters and write "
        "scorecard.json and scorecard.html (docs/scorecard.md).",
    )
    p.add_argument(
        "--matrix",
        choices=("ci", "full"),
        default="ci",
        help="ci: every scheduler's default mode on every scenario in its default variant, "
        "plus the cells the assertions need; full: every mode, every variant, h at full "
        "length (default: ci)",
    )
    p.add_argument(
        "--scheduler",
        action="append",
        metavar="NAME",
        help="adapter(s) to run: a scheduler's name (its default mode in the ci matrix, every "
        "mode in the full one), an adapter id, or all (default: all); repeat or separate "
        "with commas",
    )
    p.add_argument("--scenario", metavar="IDS", help="only these scenarios, e.g. a,g,h")
    p.add_argument("--variant", metavar="IDS", help="only these variants, e.g. no-exporter-lag0")
    p.add_argument(
        "--cell",
        action="append",
        metavar="ID",
        help="run exactly this cell, <adapter>/<scenario>/<variant> (repeatable); the "
        "output goes to build/scorecard/cells/ unless --out is given",
    )
    p.add_argument(
        "--jobs", type=int, default=DEFAULT_JOBS, help=f"cells at once (default {DEFAULT_JOBS})"
    )
    p.add_argument(
        "--clusters",
        type=int,
        default=None,
        help="local control planes to spread the cells of a scheduler that acts on the whole "
        "cluster over (KAI: one such cell per cluster at a time; default: "
        f"{DEFAULT_FULL_CLUSTERS} for the full matrix, 1 for the ci one)",
    )
    p.add_argument("--out", type=Path, help=f"output directory (default {DEFAULT_OUT})")
    p.add_argument(
        "--kind",
        action="store_true",
        help="run on a Kind cluster with the components in-cluster (kind/up.sh; cells one "
        "at a time)",
    )
    return p


def _clusters(args: argparse.Namespace) -> int:
    """Control planes to run on: ``--clusters``, else 3 for the full matrix (its chain of
    KAI cells), 1 otherwise."""
    if args.clusters is not None:
        return int(args.clusters)
    return DEFAULT_FULL_CLUSTERS if args.matrix == "full" else 1


def _adapters(names: Sequence[str] | None, *, every_mode: bool) -> tuple[Adapter, ...]:
    """The adapters ``--scheduler`` picks (default: all): a scheduler's every mode or its
    default one; an adapter id picks that adapter."""
    wanted = [n.strip() for g in names or ["all"] for n in g.split(",") if n.strip()]
    return registry.select(wanted, every_mode=every_mode)


def _csv(text: str | None) -> list[str] | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def plan(args: argparse.Namespace) -> list[Cell]:
    """The cells the arguments pick (ValueError for an unknown name)."""
    every = registry.adapters()
    if args.cell:
        cells = [matrix.parse_cell(c, every, full_h=args.matrix == "full") for c in args.cell]
        for cell in cells:
            if args.kind and cell.scenario.needs_claims:
                raise ValueError(
                    f"cell {cell.id}: scenario {cell.scenario.id} runs on the local control "
                    "plane only (the harness reads the exporters' metrics there)"
                )
        return cells
    adapters = _adapters(args.scheduler, every_mode=args.matrix == "full")
    scenario_ids = _csv(args.scenario) or list(SCENARIOS)
    unknown = [s for s in scenario_ids if s not in SCENARIOS]
    if unknown:
        raise ValueError(f"--scenario: unknown {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    if args.kind:  # the harness reads the exporters' metrics on the local control plane only
        scenario_ids = [s for s in scenario_ids if not SCENARIOS[s].needs_claims]
    scenarios = [SCENARIOS[s] for s in scenario_ids]
    variants = [parse_variant(v) for v in _csv(args.variant) or [v.id for v in VARIANTS]]
    if args.matrix == "full":
        cells = matrix.full(adapters, scenarios)
    else:
        # What the assertions need of every mode of the schedulers picked (the stale mode's d).
        modes = _adapters(args.scheduler, every_mode=True)
        required = [c for c in assertions.required_cells(modes) if c.scenario.id in scenario_ids]
        cells = matrix.with_required(matrix.defaults(adapters, scenarios), required)
    return [c for c in cells if c.variant in variants]


def judging(args: argparse.Namespace) -> tuple[tuple[Adapter, ...], bool]:
    """The adapters the assertions judge, and whether a whole matrix of theirs ran (so a
    missing cell fails): ``--scheduler`` judges the schedulers picked, every mode of each,
    as a whole (an assertion about a scheduler not picked is not applicable); picked
    cells, scenarios or variants make a partial run."""
    partial = bool(args.cell or args.scenario or args.variant)
    return _adapters(args.scheduler, every_mode=True), not partial


def _commit() -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or "unknown"


def _prepare(adapters: Sequence[Adapter], kubeconfig: Path) -> None:
    """Build every adapter's binaries and install what it needs, once, before any cell."""
    for adapter in adapters:
        if adapter.build is not None:
            print(f"== {adapter.id}: {adapter.build.summary or 'build'}", file=sys.stderr)
            binaries(adapter.build)
        run = SchedulerRun(
            adapter=adapter, kubeconfig=kubeconfig, controller_name="prepare", workdir=Path("/")
        )
        run.install()


@contextlib.contextmanager
def _control_plane() -> Iterator[tuple[Cluster, Path]]:
    with ControlPlane(bin_dir=binaries_dir()) as cp:
        api = admin_client(cp)
        try:
            install_crds(api)
        finally:
            api.close()
        kube = admin_kube(cp.server, cp)

        def backend(topology: Topology, scheduler: Adapter, controller: str) -> Deployment:
            return ProcessDeployment(
                kube=kube,
                kubeconfig=cp.kubeconfig,
                topology=topology,
                scheduler=scheduler,
                controller_name=controller,
            )

        yield Cluster(kube, backend), cp.kubeconfig


@contextlib.contextmanager
def _control_planes(count: int) -> Iterator[list[tuple[Cluster, Path]]]:
    """``count`` local control planes, started one after another."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(_control_plane()) for _ in range(count)]


@contextlib.contextmanager
def _kind() -> Iterator[list[tuple[Cluster, Path]]]:
    from tests.e2e.kind_deployment import KindDeployment
    from tests.e2e.kind_deployment import install_crds as kind_crds
    from tests.kind.cluster import _lib_value, kind_down, kind_up

    try:
        cluster = kind_up(progress=sys.stderr)
        kind_crds(cluster)
        kube = KubeClient(
            from_kubeconfig(cluster.kubeconfig),
            connect_timeout_s=30.0,
            read_timeout_s=30.0,
            pool_size=16,
        )
        image = _lib_value("PROJECT_IMAGE")

        def backend(topology: Topology, scheduler: Adapter, controller: str) -> Deployment:
            return KindDeployment(
                cluster=cluster,
                kube=kube,
                topology=topology,
                scheduler=scheduler,
                controller_name=controller,
                image=image,
            )

        yield [(Cluster(kube, backend), cluster.kubeconfig)]
    finally:
        kind_down(progress=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # SIGTERM as Ctrl-C: the running cells' components and the control planes are stopped.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        cells = plan(args)
    except ValueError as exc:
        print(f"python -m tests.scorecard: {exc}", file=sys.stderr)
        return 2
    if args.jobs < 1 or (args.clusters is not None and not 1 <= args.clusters <= 8):
        print(
            "python -m tests.scorecard: --jobs must be at least 1, --clusters 1 to 8",
            file=sys.stderr,
        )
        return 2
    target = TARGETS["kind" if args.kind else args.matrix]
    out = args.out or (DEFAULT_OUT / "cells" if args.cell else DEFAULT_OUT)
    jobs = 1 if args.kind else args.jobs
    # Cells not applicable run nothing: their schedulers need no build.
    adapters = list({c.scheduler.id: c.scheduler for c in cells if not c.not_applicable}.values())
    # Extra control planes only serve schedulers that act on the whole cluster.
    wide = sum(1 for c in cells if c.scheduler.one_per_cluster)
    clusters = 1 if args.kind or not wide else min(_clusters(args), wide)
    where = "Kind" if args.kind else f"{clusters} local control plane(s)"
    print(
        f"== scorecard: {len(cells)} cells ({args.matrix}), {jobs} at a time, {where}",
        file=sys.stderr,
    )
    start = time.monotonic()
    try:
        with _kind() if args.kind else _control_planes(clusters) as started:
            for _, kubeconfig in started:
                _prepare(adapters, kubeconfig)
            records = run_cells(
                cells,
                clusters=[cluster for cluster, _ in started],
                rerun=lambda c: f"make {target} CELL={c.id}",
                jobs=jobs,
                progress=sys.stderr,
            )
    except BuildError as exc:
        print(f"python -m tests.scorecard: building a scheduler: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("python -m tests.scorecard: interrupted; the running cells stopped", file=sys.stderr)
        return 130
    wall = time.monotonic() - start
    facts = {
        "matrix": args.matrix + (" (cells given)" if args.cell else ""),
        "backend": "Kind, components in-cluster" if args.kind else where,
        "cells": str(len(cells)),
        "at once": str(jobs),
        "wall time": f"{wall / 60:.1f} min",
        "commit": _commit(),
        "adapters": ", ".join(a.id for a in adapters),
        "machine": f"{os.cpu_count()} CPUs",
    }
    judged, complete = judging(args)
    verdicts = write(out, records, judged, facts=facts, complete=complete)
    print(text_table(records))
    print("(TopologyAffinityErrors/ran/submitted per cell)")
    for v in verdicts:
        state = {None: "n/a  ", True: "holds", False: "FAILS"}[v.passed]
        print(f"{state} {v.id}: {v.statement}")
        if v.passed is False:
            for line in v.evidence:
                print(f"        {line}")
    print(f"wrote {out / 'scorecard.json'} and {out / 'scorecard.html'} in {wall:.0f} s")
    return 1 if any(v.passed is False for v in verdicts) else 0
