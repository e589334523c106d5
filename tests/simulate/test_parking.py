"""Parked pods in batches by next attempt (fakenrt/simulate/parking.py): taken out when
due, earliest first; moved on whole or merged into the batch already waiting there; a
batch's "known to fit nowhere" version survives a move only when both agree."""

from __future__ import annotations

from fakenrt.simulate.parking import Batch, ParkingLot


def test_batches_come_due_earliest_first_with_every_shape() -> None:
    lot: ParkingLot[str] = ParkingLot()
    lot.park(["a1"], "A", 20.0)
    lot.park(["b1", "b2"], "B", 10.0)
    lot.park(["a2"], "A", 10.0)
    assert lot.earliest() == 10.0
    assert lot.due(9.0) == []
    (first,) = lot.due(10.0)
    assert first.next_try == 10.0 and first.shapes == {"B": ["b1", "b2"], "A": ["a2"]}
    assert first.size() == 3
    (second,) = lot.due(30.0)
    assert second.shapes == {"A": ["a1"]}
    assert lot.earliest() is None


def test_a_batch_moves_on_whole_or_merges_into_the_one_waiting() -> None:
    lot: ParkingLot[str] = ParkingLot()
    lot.park(["a1"], "A", 10.0)
    (batch,) = lot.due(10.0)
    batch.verified = 7
    lot.repark(batch, 20.0)
    (moved,) = lot.due(20.0)
    assert moved is batch and moved.verified == 7
    # Parked beside a batch known to fit nowhere: the merged batch is not known any more.
    lot.park(["b1"], "B", 30.0)
    lot.repark(moved, 30.0)
    (merged,) = lot.due(30.0)
    assert merged.shapes == {"B": ["b1"], "A": ["a1"]} and merged.verified is None


def test_merging_two_batches_known_at_one_version_keeps_it() -> None:
    lot: ParkingLot[str] = ParkingLot()
    lot.repark(Batch(0.0, {"A": ["a1"]}, verified=3), 10.0)
    lot.repark(Batch(0.0, {"A": ["a2"], "B": ["b1"]}, verified=3), 10.0)
    (batch,) = lot.due(10.0)
    assert batch.shapes == {"A": ["a1", "a2"], "B": ["b1"]} and batch.verified == 3
    lot.repark(Batch(0.0, {}), 40.0)  # an emptied batch is dropped
    assert lot.earliest() is None


def test_batches_taken_out_and_not_attempted_are_put_back_as_they_were() -> None:
    lot: ParkingLot[str] = ParkingLot()
    lot.park(["a1"], "A", 10.0)
    lot.park(["b1"], "B", 12.0)
    lot.park(["c1"], "C", 30.0)
    due = lot.due(12.0)
    assert [b.next_try for b in due] == [10.0, 12.0]
    due[0].verified = 5
    lot.restore(due)
    assert lot.earliest() == 10.0
    again = lot.due(12.0)
    assert again == due and again[0].verified == 5
    lot.restore(again)
    lot.park(["a2"], "A", 10.0)  # still the batch of its moment
    (first, _) = lot.due(12.0)
    assert first.shapes == {"A": ["a1", "a2"]}
