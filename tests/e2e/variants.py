"""A scenario's variants: with or without the exporter, and the NRT lag. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Lag:
    """An NRT publishing lag: a change shows ``delay`` + U(0, ``jitter``) after it happened
    (a profile node's ``nrt: {delay, jitter}``, docs/profiles.md)."""

    id: str
    label: str
    delay: str
    jitter: str


#: NRT follows the simulated kubelet at once.
LAG_NONE = Lag(id="lag0", label="NRT lag 0", delay="0s", jitter="0s")
#: 5 s +- 3 s: 2 s + U(0, 6 s).
LAG_5S = Lag(id="lag5", label="NRT lag 5 s ± 3 s", delay="2s", jitter="6s")
LAGS = (LAG_NONE, LAG_5S)


@dataclass(frozen=True)
class Variant:
    """How a scenario's harness runs: with or without the exporter (observed placement
    annotations), and the NRT lag of every node."""

    exporter: bool
    lag: Lag

    @property
    def id(self) -> str:
        return f"{'exporter' if self.exporter else 'no-exporter'}-{self.lag.id}"

    @property
    def label(self) -> str:
        return f"{'exporter' if self.exporter else 'no exporter'}, {self.lag.label}"


VARIANTS = tuple(Variant(exporter=e, lag=lag) for e in (True, False) for lag in LAGS)
_VARIANT_ID = re.compile(r"^(exporter|no-exporter)-(lag0|lag5)$")


def parse_variant(text: str) -> Variant:
    """``exporter-lag0``, ``no-exporter-lag5``, ... Raises ValueError naming the choices."""
    if not _VARIANT_ID.match(text):
        choices = ", ".join(v.id for v in VARIANTS)
        raise ValueError(f"variant {text!r}: expected one of {choices}")
    return next(v for v in VARIANTS if v.id == text)
