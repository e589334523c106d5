"""The pod-set fingerprint equals the upstream podfingerprint library's (golden files)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakenrt.nrt.fingerprint import fingerprint, fingerprint_keys

# testdata/compat-tiny-3pods-1ns.{txt,sign} of k8stopologyawareschedwg/podfingerprint
TINY = [
    ("production", "jaeger-dpgjk"),
    ("production", "nginx-rt684"),
    ("production", "envoy-g9m22"),
]
TINY_SIGN = "pfp0v001607b76a0e9d3aeb4"

# testdata/compat-small-10pods-3ns.{txt,sign}
SMALL = [
    ("analytics", "controller-69dkj"),
    ("kube-public", "subscriber-tq6v7"),
    ("kube-public", "transformer-hfbng"),
    ("kube-public", "validator-c6pn5"),
    ("kube-system", "proxy-wszrd"),
    ("middleware", "processor-jkrl4"),
    ("network", "gateway-vsll5"),
    ("network", "importer-kzdfr"),
    ("network", "importer-q5vt9"),
    ("staging", "prometheus-bwgbn"),
]
SMALL_SIGN = "pfp0v001567144e4a561bb5a"


@pytest.mark.parametrize(
    ("pods", "sign"),
    [
        pytest.param(TINY, TINY_SIGN, id="upstream-tiny-3pods"),
        pytest.param(SMALL, SMALL_SIGN, id="upstream-small-10pods"),
        # no pods: XXH64 of nothing
        pytest.param([], "pfp0v001ef46db3751d8e999", id="empty"),
    ],
)
def test_matches_upstream_golden_signatures(pods: list[tuple[str, str]], sign: str) -> None:
    assert fingerprint(pods) == sign
    shuffled = list(pods)
    random.Random(12345).shuffle(shuffled)
    assert fingerprint(shuffled) == sign
    assert fingerprint_keys(f"{ns}/{name}" for ns, name in pods) == sign


def test_namespace_and_name_are_not_concatenated() -> None:
    # the namespace seeds the name's hash, so moving characters across the boundary matters
    assert fingerprint([("ab", "c")]) != fingerprint([("a", "bc")])


def test_key_without_namespace_is_an_error() -> None:
    with pytest.raises(ValueError, match="'p1' is not namespace/name"):
        fingerprint_keys(["p1"])


@given(
    st.sets(
        st.tuples(st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=8)), max_size=12
    )
)
def test_order_independent_and_sensitive_to_membership(pods: set[tuple[str, str]]) -> None:
    ordered = sorted(pods)
    sign = fingerprint(ordered)
    assert fingerprint(reversed(ordered)) == sign
    assert len(sign) == 24 and sign.startswith("pfp0v001")
    if ordered:
        assert fingerprint(ordered[1:]) != sign
