"""A hashable value whose hash is computed once. Pure.

A tuple hashes its items again on every lookup. Two large parts of keys looked up again
and again are wrapped: a node's static part of the NRT
(:attr:`fakenrt.scheduler.topology.NumaTopology.static`: every zone's capacity,
allocatable and costs, as tuples of ``Decimal`` pairs - about a hundred ``Decimal``
hashes on the bundled shapes) in every state key of the kept books
(:func:`fakenrt.scheduler.books.state_key`), and the Memory Manager's machine state
(:func:`fakenrt.kubelet.admission_memo.memory_key`) in every admission's key. Wrapped,
the value hashes once; equal values still compare equal.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import final


@final
class Hashed:
    """``value``, hashed once. Equal to another :class:`Hashed` of an equal value."""

    __slots__ = ("_hash", "value")

    def __init__(self, value: Hashable) -> None:
        self.value = value
        self._hash = hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Hashed):
            return NotImplemented
        return self._hash == other._hash and self.value == other.value

    def __reduce__(self) -> tuple[type[Hashed], tuple[Hashable]]:
        # Hashed again where it is unpickled: a string's hash differs between processes.
        return (Hashed, (self.value,))

    def __repr__(self) -> str:
        return f"Hashed({self.value!r})"
