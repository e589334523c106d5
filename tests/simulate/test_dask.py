"""``--executor dask`` against a real Dask cluster started by the test: a ``dask scheduler``
process and a ``dask worker`` process with two worker processes, over TCP on localhost.
A sweep over seeds run there prints the same bytes as the local run; a scheduler nobody
answers at, workers that run other sources, and a missing extra are one-line errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
from click.testing import CliRunner

from fakenrt.cli import main
from fakenrt.simulate import dask_runs

BIN = Path(sys.executable).parent
#: A small scenario: every strategy, a sweep of two values, two seeds (36 runs).
ARGS = [
    "simulate",
    "--profiles", "fakenrt/examples/profiles/shapes.yaml",
    "--trace", "fakenrt/examples/simulate/small-trace.yaml",
    "--sweep", "nrt-delay=0,15",
    "--seeds", "2",
    "--no-progress",
]  # fmt: skip
ROOT = Path(__file__).resolve().parents[2]


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _start(args: list[str], log: IO[bytes], cwd: Path) -> subprocess.Popen[bytes]:
    """A process in its own session (stopped with its children), output to ``log``."""
    return subprocess.Popen(
        args, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address of a scheduler with two worker processes (one thread each)."""
    pytest.importorskip("distributed")
    tmp = tmp_path_factory.mktemp("dask")
    info = tmp / "scheduler.json"
    logs = [(tmp / name).open("wb") for name in ("scheduler.log", "worker.log")]
    started = [
        _start(
            [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(info)],
            logs[0], tmp,
        )
    ]  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not info.exists() or not info.read_text().strip():
            assert started[0].poll() is None, (tmp / "scheduler.log").read_text()
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        started.append(
            _start(
                [str(BIN / "dask"), "worker", address, "--nworkers", "2", "--nthreads", "1",
                 "--no-dashboard", "--memory-limit", "0", "--local-directory", str(tmp)],
                logs[1], tmp,
            )
        )  # fmt: skip
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield str(address)
    finally:
        for process in reversed(started):
            _stop(process)
        for log in logs:
            log.close()


def _invoke(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return done.exit_code, done.output


def test_a_sweep_on_the_cluster_gives_the_bytes_of_the_local_run(
    scheduler: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    local = _invoke(*ARGS, "--json", "--jobs", "1")
    remote = _invoke(*ARGS, "--json", "--executor", "dask", "--address", scheduler)
    assert local[0] == 0 and remote[0] == 0, remote[1]
    assert remote[1] == local[1]
    doc = json.loads(remote[1])
    assert doc["seeds"]["values"] == [1, 2] and len(doc["sweep"]["values"]) == 2
    # the table too
    assert _invoke(*ARGS, "--executor", "dask", "--address", scheduler) == _invoke(
        *ARGS, "--jobs", "2"
    )


def test_workers_running_other_sources_are_refused(
    scheduler: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Here, the fingerprint covers other sources than on the workers (which import the
    # module afresh): as if this client ran another version.
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(dask_runs, "PACKAGES", ("fakenrt",))
    dask_runs.fingerprint.cache_clear()
    try:
        code, out = _invoke(*ARGS, "--executor", "dask", "--address", scheduler)
    finally:
        dask_runs.fingerprint.cache_clear()
    assert code != 0 and out.count("\n") == 1
    assert "Dask workers" in out and "run other numa-testkit sources" in out, out


def test_no_scheduler_at_the_address_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed")
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr("fakenrt.simulate.dask_runs.CONNECT_TIMEOUT", 2.0)
    code, out = _invoke(*ARGS, "--executor", "dask", "--address", "tcp://127.0.0.1:9")
    assert code != 0 and out.count("\n") == 1
    assert out.startswith("Error: --address tcp://127.0.0.1:9: no Dask scheduler answers"), out


def test_without_the_extra_the_executor_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails
    code, out = _invoke(*ARGS, "--executor", "dask", "--address", "tcp://127.0.0.1:9")
    assert code != 0
    assert out == (
        "Error: --executor dask needs Dask's client: pip install 'numa-testkit[distributed]'\n"
    )


def test_address_and_executor_go_together() -> None:
    code, out = _invoke("simulate", "--address", "tcp://127.0.0.1:9")
    assert code != 0 and "--address goes with --executor dask" in out
