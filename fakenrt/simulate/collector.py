"""The garbage collector's pace during a run. Pure (process-wide settings only).

A run allocates objects fast and keeps most of them to its end (every pod's record,
log and placements, every node's kept books), and it makes few reference cycles. With
CPython's default pace (a young collection every 700 net allocations of tracked
objects, an older one every tenth of those) the collector keeps walking objects that
are not garbage; :func:`fewer_collections` collects the young generation only every
:data:`YOUNG_THRESHOLD` allocations for the run's length and puts the setting back
after. Cyclic garbage still goes, later: at most that many objects more wait for it.
Measured in docs/simulate.md (Performance).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Net allocations of tracked objects between two young collections during a run.
YOUNG_THRESHOLD = 50_000


@contextmanager
def fewer_collections(young: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """Collect the young generation at most every ``young`` allocations inside the block
    (never more often than the process already does), as it was after."""
    before = gc.get_threshold()
    gc.set_threshold(max(young, before[0]), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
