"""Linux cpulist syntax (``0-3,8,10-11``), as in sysfs ``cpulist`` files and kubelet flags.

Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable


class CpuListError(ValueError):
    """A cpulist string that does not parse; the message says which part is wrong."""


def parse_cpulist(text: str) -> frozenset[int]:
    """Parse a cpulist such as ``"0-31,64-95"`` into the set of CPU ids.

    Whitespace around the string and around items is ignored; an empty string is the
    empty set. Raises :class:`CpuListError` for a malformed item or a descending range.
    """
    cpus: set[int] = set()
    stripped = text.strip()
    if not stripped:
        return frozenset()
    for raw in stripped.split(","):
        item = raw.strip()
        if not item:
            raise CpuListError(f"empty item in cpulist {text!r}")
        lo_text, sep, hi_text = item.partition("-")
        try:
            lo = int(lo_text)
            hi = int(hi_text) if sep else lo
        except ValueError:
            raise CpuListError(f"{item!r} in cpulist {text!r} is not a CPU id or range") from None
        if lo < 0 or hi < lo:
            raise CpuListError(f"range {item!r} in cpulist {text!r} is not ascending")
        cpus.update(range(lo, hi + 1))
    return frozenset(cpus)


def format_cpulist(cpus: Iterable[int]) -> str:
    """Format CPU ids in canonical cpulist form: sorted, runs collapsed (``"0-3,8"``)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)
