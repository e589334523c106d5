"""The runs of a ``fakenrt simulate`` invocation on a Dask cluster (``--executor dask
--address tcp://scheduler:8786``): each run is one task, submitted to the cluster's
scheduler, executed by its workers, the results gathered back in order. The I/O edge of
the simulation for a cluster (the runs themselves are pure and seeded, so a result does
not depend on where it was computed: the JSON is byte-identical to a local run).

Before submitting, every worker must run the same code as this client: the same Python
and the same numa-testkit sources (a fingerprint of both, compared worker by worker), so
a cluster built from another version is refused in one line instead of giving other
numbers. Needs the ``distributed`` extra (``pip install 'numa-testkit[distributed]'``).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from typing import Any

from fakenrt.simulate.metrics import StrategyResult
from fakenrt.simulate.runner import simulate_run
from fakenrt.simulate.sweep import Run

EXTRA = "numa-testkit[distributed]"
#: Seconds to wait for the scheduler to answer and for a first worker to join.
CONNECT_TIMEOUT = 30.0
#: The packages whose sources make the results (fingerprinted).
PACKAGES = ("fakenrt", "exporter", "protos")

Progress = Callable[[int, int, float], None]


class ExecutorError(RuntimeError):
    """The cluster cannot run the simulation; the message says why and what to do."""


@cache
def fingerprint() -> str:
    """The Python version and a digest of every source file of the packages the
    simulation runs."""
    digest = hashlib.sha256(f"python {sys.version_info[:3]}".encode())
    for package in PACKAGES:
        stack = [resources.files(package)]
        files = []
        while stack:
            entry = stack.pop()
            for child in entry.iterdir():
                if child.is_dir():
                    if child.name != "__pycache__":
                        stack.append(child)
                elif child.name.endswith((".py", ".yaml")):
                    files.append(child)
        for child in sorted(files, key=str):
            digest.update(str(child).rsplit(package, 1)[-1].encode())
            digest.update(child.read_bytes())
    return digest.hexdigest()[:16]


def _client(address: str) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise ExecutorError(f"--executor dask needs Dask's client: pip install '{EXTRA}'") from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ExecutorError(f"--address {address}: no Dask scheduler answers ({detail})") from None


def _check_workers(client: Any, address: str) -> None:
    try:
        client.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
    except TimeoutError:
        raise ExecutorError(
            f"--address {address}: no worker joined the scheduler within {CONNECT_TIMEOUT:g} s"
        ) from None
    mine = fingerprint()
    try:
        theirs: dict[str, str] = client.run(fingerprint)
    except Exception as exc:  # the workers cannot even import numa-testkit
        raise ExecutorError(
            f"the Dask workers at {address} cannot run numa-testkit "
            f"({type(exc).__name__}: {' '.join(str(exc).split())}); install "
            f"'numa-testkit[fakenrt,distributed]' of this version on them (docs/simulate.md)"
        ) from None
    other = sorted(worker for worker, value in theirs.items() if value != mine)
    if other:
        raise ExecutorError(
            f"{len(other)} of {len(theirs)} Dask workers ({other[0]}...) run other "
            f"numa-testkit sources or another Python (fingerprint {theirs[other[0]]}, here "
            f"{mine}); install this version on every worker, or results would differ"
        )


def run_on_dask(
    runs: Sequence[Run], *, address: str, progress: Progress | None = None
) -> list[StrategyResult]:
    """Every run as a task of the Dask cluster at ``address``; results in ``runs`` order."""
    try:
        from distributed import as_completed
    except ImportError:
        raise ExecutorError(f"--executor dask needs Dask's client: pip install '{EXTRA}'") from None

    with _client(address) as client:
        _check_workers(client, address)
        futures = client.map(
            simulate_run,
            list(runs),
            key=[f"fakenrt-simulate-{i}" for i in range(len(runs))],
            pure=False,
        )
        try:
            for done, _ in enumerate(as_completed(futures), 1):
                if progress is not None:
                    progress(done, len(runs), 0.0)
            results: list[StrategyResult] = client.gather(futures)
        finally:
            client.cancel(futures)
        return results
