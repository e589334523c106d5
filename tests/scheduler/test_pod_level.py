"""``fakenrt.podspec.pod_level``: upstream's ``PodRequests`` rule, which both the scheduler's
pod-scope admission step and the whole-node fit (``effective_requests``) use."""

from __future__ import annotations

from decimal import Decimal

import pytest

from fakenrt.podspec import pod_level


@pytest.mark.parametrize(
    ("inits", "apps", "expected"),
    [
        pytest.param([], [{"cpu": 2}, {"cpu": 3}], {"cpu": 5}, id="apps-add-up"),
        pytest.param([(False, {"cpu": 8})], [{"cpu": 3}], {"cpu": 8}, id="init-peak-wins"),
        pytest.param([(False, {"cpu": 2})], [{"cpu": 3}], {"cpu": 3}, id="apps-win"),
        pytest.param(
            [(True, {"cpu": 2}), (False, {"cpu": 5})],
            [{"cpu": 4}],
            {"cpu": 7},
            id="init-after-sidecar-counts-the-sidecar",
        ),
        pytest.param(
            [(False, {"cpu": 5}), (True, {"cpu": 2})],
            [{"cpu": 4}],
            {"cpu": 6},
            id="init-before-sidecar-does-not",
        ),
        pytest.param(
            [(False, {"gpu": 1})], [{"cpu": 1}], {"cpu": 1, "gpu": 1}, id="init-only-resource"
        ),
        pytest.param([(False, {"cpu": 0})], [{"cpu": 0}], {}, id="zero-dropped"),
    ],
)
def test_pod_level_rule(
    inits: list[tuple[bool, dict[str, int]]], apps: list[dict[str, int]], expected: dict[str, int]
) -> None:
    assert pod_level(inits, apps) == expected


def test_pod_level_keeps_decimals() -> None:
    totals = pod_level([(True, {"cpu": Decimal("0.5")})], [{"cpu": Decimal("1.25")}])
    assert totals == {"cpu": Decimal("1.75")}
    assert isinstance(totals["cpu"], Decimal)
