"""The collector's pace during a run: set for the block, put back after."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from fakenrt.simulate.collector import YOUNG_THRESHOLD, fewer_collections


@pytest.fixture(autouse=True)
def _thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_the_young_generation_waits_longer_inside_and_as_before_after() -> None:
    gc.set_threshold(700, 10, 10)
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_put_back_when_the_run_fails() -> None:
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("the run failed")
    assert gc.get_threshold() == (700, 10, 10)


def test_never_collects_more_often_than_the_process_does() -> None:
    gc.set_threshold(YOUNG_THRESHOLD * 2, 5, 5)
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD * 2, 5, 5)
    with fewer_collections(young=1000), fewer_collections():
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD * 2
    assert gc.get_threshold() == (YOUNG_THRESHOLD * 2, 5, 5)
