"""Executing the planned runs: in this process, in a pool of local worker processes
(``--jobs``), or on a Dask cluster (``--executor dask``, :mod:`fakenrt.simulate.dask_runs`).
Each run is independent and seeded, so the results do not depend on where it ran. The
edge of the simulation that may start processes; the runs themselves are pure."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

from fakenrt.simulate.engine import simulate
from fakenrt.simulate.metrics import StrategyResult
from fakenrt.simulate.strategies import BY_NAME
from fakenrt.simulate.sweep import Run

#: Called with (runs finished, runs in all, progress of the current run 0..1).
Progress = Callable[[int, int, float], None]


#: Where the runs execute (``--executor``).
LOCAL, DASK = "local", "dask"
EXECUTORS = (LOCAL, DASK)


def simulate_run(run: Run) -> StrategyResult:
    """One run (a task of the pool or of the cluster)."""
    return simulate(run.scenario, BY_NAME[run.strategy])


def execute(
    runs: Sequence[Run],
    *,
    jobs: int = 1,
    progress: Progress | None = None,
    executor: str = LOCAL,
    address: str | None = None,
) -> list[StrategyResult]:
    """Results in the order of ``runs``. With ``executor`` :data:`DASK` the runs go to the
    Dask scheduler at ``address`` (``jobs`` is the cluster's business then)."""
    if executor == DASK:
        from fakenrt.simulate.dask_runs import run_on_dask  # the optional extra

        if address is None:
            raise ValueError("the dask executor needs the scheduler's address")
        return run_on_dask(runs, address=address, progress=progress)
    total = len(runs)
    if jobs <= 1 or total <= 1:
        out = []
        for i, run in enumerate(runs):

            def inner(fraction: float, done: int = i) -> None:
                if progress is not None:
                    progress(done, total, fraction)

            out.append(simulate(run.scenario, BY_NAME[run.strategy], progress=inner))
            if progress is not None:
                progress(i + 1, total, 0.0)
        return out
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=min(jobs, total), mp_context=context) as pool:
        futures = [pool.submit(simulate_run, run) for run in runs]
        results: list[StrategyResult] = []
        for i, future in enumerate(futures):
            results.append(future.result())
            if progress is not None:
                progress(i + 1, total, 0.0)
        return results
