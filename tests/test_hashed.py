"""Hashed: a value hashed once, equal exactly when the values are equal."""

from __future__ import annotations

import pickle
import subprocess
import sys
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from fakenrt.hashed import Hashed

values = st.recursive(
    st.one_of(st.none(), st.integers(), st.text(max_size=4), st.decimals(allow_nan=False)),
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
    max_leaves=8,
)


@given(values, values)
def test_equal_exactly_when_the_values_are(a: object, b: object) -> None:
    assert (Hashed(a) == Hashed(b)) == (a == b)
    if a == b:
        assert hash(Hashed(a)) == hash(Hashed(b))


@given(values)
def test_hash_is_the_values(a: object) -> None:
    assert hash(Hashed(a)) == hash(a)


def test_a_dict_finds_an_equal_key() -> None:
    def key() -> object:
        return ("static", (("cpu", Decimal("32")), ("memory", Decimal(1024))))

    classes = {Hashed(key()): "class"}
    assert classes[Hashed(key())] == "class"
    assert Hashed(key()) != key()  # only another Hashed compares


def test_unpickled_in_another_process_hashes_there() -> None:
    # A string's hash differs between processes (PYTHONHASHSEED): the hash is not carried.
    blob = pickle.dumps(Hashed(("policy", "single-numa-node")))
    code = (
        "import pickle, sys; from fakenrt.hashed import Hashed; "
        "h = pickle.loads(sys.stdin.buffer.read()); "
        "print(hash(h) == hash(('policy', 'single-numa-node')), "
        "h == Hashed(('policy', 'single-numa-node')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], input=blob, capture_output=True, check=True
    ).stdout
    assert out.split() == [b"True", b"True"]
