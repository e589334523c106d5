"""``exporter.promtext`` read back by prometheus_client's own parser (test-only)."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.promtext import Counter, Gauge, Histogram, Registry


def parsed(registry: Registry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = registry.expose().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_exposition_parses_with_the_values_set() -> None:
    registry = Registry()
    counter = Counter("things", "Things done.", ["result"], registry=registry)
    gauge = Gauge("level", 'A "gauge"\\ with\nescapes.', registry=registry)
    info = Gauge("info", "Build.", ["version"], registry=registry)
    histogram = Histogram("seconds", "Durations.", buckets=(0.1, 1.0), registry=registry)
    counter.labels("ok").inc()
    counter.labels("ok").inc(2)
    counter.labels('we"ird\\\n').inc()
    gauge.set(-3.5)
    info.labels("1.2").set(1)
    for value in (0.05, 0.5, 5.0):
        histogram.observe(value)
    assert parsed(registry) == {
        ("things_total", (("result", "ok"),)): 3.0,
        ("things_total", (("result", 'we"ird\\\n'),)): 1.0,
        ("level", ()): -3.5,
        ("info", (("version", "1.2"),)): 1.0,
        ("seconds_bucket", (("le", "0.1"),)): 1.0,
        ("seconds_bucket", (("le", "1.0"),)): 2.0,
        ("seconds_bucket", (("le", "+Inf"),)): 3.0,
        ("seconds_count", ()): 3.0,
        ("seconds_sum", ()): 5.55,
    }
    assert registry.get_sample_value("things_total", {"result": "ok"}) == 3.0
    assert registry.get_sample_value("seconds_count") == 3.0
    assert registry.get_sample_value("things_total", {"result": "missing"}) is None


def test_misuse_is_refused() -> None:
    registry = Registry()
    counter = Counter("c", "C.", ["a"], registry=registry)
    with pytest.raises(ValueError, match="registered twice"):
        Gauge("c", "Again.", registry=registry)
    with pytest.raises(ValueError, match="takes labels"):
        counter.labels("x", "y")
    with pytest.raises(ValueError, match="only goes up"):
        counter.labels("x").inc(-1)
