"""NUMA affinity bitmasks, ordered exactly as the kubelet orders them. Pure, stdlib only.

Mirrors ``pkg/kubelet/cm/topologymanager/bitmask/bitmask.go``: a mask is a 64-bit set of
NUMA node ids; a mask is *narrower* than another when it has fewer bits set, and between
masks with the same number of bits the one with the smaller integer value (more
lower-numbered bits) is narrower.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from itertools import combinations

MAX_BITS = 64


class BitMaskError(ValueError):
    """A NUMA node id outside 0..63 (the kubelet's mask is a uint64)."""


class BitMask:
    """An immutable set of NUMA node ids. Hashable; ``==`` compares the bits."""

    __slots__ = ("_bits", "_value")

    def __init__(self, value: int = 0) -> None:
        if value < 0 or value >= 1 << MAX_BITS:
            raise BitMaskError(f"mask value {value} does not fit 64 bits")
        self._value = value
        self._bits: tuple[int, ...] | None = None

    @classmethod
    def of(cls, *bits: int) -> BitMask:
        """A mask with the given NUMA node ids set."""
        return cls.from_bits(bits)

    @classmethod
    def from_bits(cls, bits: Iterable[int]) -> BitMask:
        value = 0
        for bit in bits:
            if bit < 0 or bit >= MAX_BITS:
                raise BitMaskError("bit number must be in range 0-63")
            value |= 1 << bit
        return cls(value)

    @property
    def value(self) -> int:
        return self._value

    def count(self) -> int:
        return self._value.bit_count()

    def is_empty(self) -> bool:
        return self._value == 0

    def is_set(self, bit: int) -> bool:
        return 0 <= bit < MAX_BITS and bool(self._value >> bit & 1)

    def any_set(self, bits: Iterable[int]) -> bool:
        return any(self.is_set(b) for b in bits)

    def bits(self) -> tuple[int, ...]:
        """The set NUMA node ids, ascending."""
        if self._bits is None:
            v = self._value
            self._bits = tuple(i for i in range(v.bit_length()) if v >> i & 1)
        return self._bits

    def and_(self, *others: BitMask) -> BitMask:
        v = self._value
        for o in others:
            v &= o._value
        return BitMask(v)

    def or_(self, *others: BitMask) -> BitMask:
        v = self._value
        for o in others:
            v |= o._value
        return BitMask(v)

    def is_subset_of(self, other: BitMask) -> bool:
        return self._value & other._value == self._value

    def is_less_than(self, other: BitMask) -> bool:
        """``IsLessThan``: the smaller integer value (more lower-numbered bits set)."""
        return self._value < other._value

    def is_narrower_than(self, other: BitMask) -> bool:
        """``IsNarrowerThan``: fewer bits set; on a tie, :meth:`is_less_than`."""
        a, b = self.count(), other.count()
        if a == b:
            return self._value < other._value
        return a < b

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BitMask) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return f"BitMask({list(self.bits())})"

    def __str__(self) -> str:
        return "{" + ",".join(str(b) for b in self.bits()) + "}"


def iterate_masks(bits: Iterable[int]) -> tuple[BitMask, ...]:
    """Every non-empty mask over ``bits``: all of size 1, then size 2, ... - each size in
    lexicographic order of the given bits, as ``bitmask.IterateBitMasks`` visits them.
    The count is 2^n - 1."""
    return _masks(tuple(bits))


@lru_cache(maxsize=64)
def _masks(ordered: tuple[int, ...]) -> tuple[BitMask, ...]:
    return tuple(
        BitMask.from_bits(combo)
        for size in range(1, len(ordered) + 1)
        for combo in combinations(ordered, size)
    )
