"""Kubernetes timestamp formats from float seconds since the epoch (the injected clock). Pure."""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(at: float) -> str:
    """``metav1.Time``: whole seconds, UTC (``2026-01-02T03:04:05Z``)."""
    return datetime.fromtimestamp(int(at), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(at: float) -> str:
    """``metav1.MicroTime``: microseconds, UTC (``2026-01-02T03:04:05.123456Z``)."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(text: str) -> float:
    """Seconds since the epoch of a ``metav1.Time`` / ``MicroTime`` string."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
