"""``ZoneLedger.breaks_group``: the Memory Manager's ``isAffinityViolatingNUMAAllocations``,
which both the hint filter and the allocation step of the walk ask."""

from __future__ import annotations

import pytest

from fakenrt.scheduler.placement import Placement
from tests.scheduler.builders import GI, ledger, topology

ZONE = {"capacity": {"cpu": 8, "memory": 16 * GI}}


@pytest.mark.parametrize(
    ("held", "mask", "breaks"),
    [
        pytest.param([], 0b011, False, id="no-blocks"),
        pytest.param([{0}], 0b001, False, id="one-zone-mask-never-breaks"),
        pytest.param([{0}], 0b011, True, id="over-a-one-zone-block"),
        pytest.param([{0, 1}], 0b011, False, id="same-group"),
        pytest.param([{0, 1}], 0b111, True, id="wider-than-the-group"),
        pytest.param([{0, 1}], 0b110, True, id="overlapping-group"),
        pytest.param([{2}], 0b011, False, id="block-outside-the-mask"),
        pytest.param([{0}, {0, 1}], 0b011, False, id="latest-block-sets-the-group"),
    ],
)
def test_breaks_group(held: list[set[int]], mask: int, breaks: bool) -> None:
    book = ledger(topology([ZONE, ZONE, ZONE]))
    book.charge(Placement(memory_blocks=tuple(frozenset(b) for b in held)))
    assert book.breaks_group(mask) is breaks
