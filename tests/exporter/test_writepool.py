"""``exporter.writepool``: at most N writes at once, at most one per pod, queued ones
droppable, a failing job never ends a worker."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from exporter.writepool import WritePool


class Gate:
    """Jobs that block until released, recording how many ran at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.ran: list[str] = []

    def job(self, key: str) -> Callable[[], None]:
        def run() -> None:
            with self.lock:
                self.running += 1
                self.most = max(self.most, self.running)
            self.release.wait(10)
            with self.lock:
                self.running -= 1
                self.ran.append(key)

        return run


@pytest.mark.parametrize("workers", [1, 3])
def test_at_most_n_at_once_and_every_job_runs(workers: int) -> None:
    pool, gate = WritePool(workers), Gate()
    for i in range(10):
        assert pool.submit(f"p{i}", gate.job(f"p{i}"))
    assert not pool.wait_idle(0.2)
    gate.release.set()
    assert pool.wait_idle(10)
    assert gate.most == workers
    assert sorted(gate.ran) == sorted(f"p{i}" for i in range(10))
    pool.stop()


def test_one_pending_write_per_key() -> None:
    pool, gate = WritePool(2), Gate()
    assert pool.submit("a", gate.job("a"))
    assert pool.pending("a")
    assert not pool.submit("a", gate.job("a-again"))
    gate.release.set()
    assert pool.wait_idle(10)
    assert not pool.pending("a")
    assert pool.submit("a", gate.job("a-later"))
    assert pool.wait_idle(10)
    assert gate.ran == ["a", "a-later"]
    pool.stop()


def test_queued_jobs_can_be_dropped() -> None:
    pool, gate = WritePool(1), Gate()
    for key in ("a", "b", "c"):
        pool.submit(key, gate.job(key))
    while gate.running == 0:  # "a" started
        threading.Event().wait(0.01)
    assert pool.drop_queued() == 2
    assert not pool.pending("b")
    gate.release.set()
    assert pool.wait_idle(10)
    assert gate.ran == ["a"]
    pool.stop()


def test_a_failing_job_is_logged_and_the_worker_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    pool = WritePool(1)
    ran = threading.Event()

    def broken() -> None:
        raise RuntimeError("bug")

    pool.submit("a", broken)
    pool.submit("b", ran.set)
    assert pool.wait_idle(10)
    assert ran.is_set()
    assert "write failed unexpectedly" in caplog.text
    pool.stop()


def test_a_stopped_pool_takes_nothing() -> None:
    pool = WritePool(2)
    pool.stop()
    assert not pool.submit("a", lambda: None)
    with pytest.raises(ValueError, match="at least one worker"):
        WritePool(0)
