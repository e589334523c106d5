"""fakenrt.yamltext: libyaml's C parser, duplicate keys refused, sizes bounded before
anything is built, every error one line (issue 21, item 4)."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from fakenrt.yamltext import MAX_DEPTH, YamlError, _StrictLoader, load_all, load_one


def test_the_c_parser_is_the_one_used() -> None:
    assert yaml.__with_libyaml__
    assert issubclass(_StrictLoader, yaml.CSafeLoader)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("a: 1\na: 2\n", "duplicate key 'a' (line 2, column 1)", id="duplicate"),
        pytest.param("a:\n  b: 1\n  b: 1\n", "duplicate key 'b' (line 3, column 3)", id="nested"),
        pytest.param("? [1]\n: 2\n", "a key that is a list or mapping", id="unhashable-key"),
        pytest.param("a: [\n", "not valid YAML: ", id="syntax"),
        pytest.param("[" + "0," * 20 + "0]", "more than 10 YAML values", id="values"),
        pytest.param("a: " + "9" * 5000, "an integer of more than 4,300 digits", id="huge-int"),
        pytest.param("a: 2001-13-45", "a value cannot be read", id="bad-date"),
        pytest.param("a: 1\n---\nb: 2\n", "2 YAML documents where one is expected", id="two-docs"),
    ],
)
def test_refusals_are_one_bounded_line(text: str, message: str) -> None:
    with pytest.raises(YamlError) as caught:
        load_one(text, max_values=10)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert len(str(caught.value)) < 300


def test_nesting_is_bounded() -> None:
    with pytest.raises(YamlError, match=f"nested more than {MAX_DEPTH} levels deep"):
        load_one("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert load_one("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None


def test_a_long_key_is_quoted_bounded() -> None:
    """(libyaml itself refuses a plain key of more than 1024 characters, in one line.)"""
    with pytest.raises(YamlError) as caught:
        load_one("k" * 1000 + ": 1\n" + "k" * 1000 + ": 2\n")
    assert "(1000 characters)" in str(caught.value)
    assert len(str(caught.value)) < 300
    with pytest.raises(YamlError, match="line 1, column 100001"):
        load_one("k" * 100_000 + ": 1\n")


def test_aliases_are_shared_not_copied() -> None:
    text = "a: &a [1, 2]\n" + "".join(f"b{i}: *a\n" for i in range(5))
    value = load_one(text, max_values=20)
    assert isinstance(value, dict)
    assert all(value[f"b{i}"] is value["a"] for i in range(5))


def test_documents() -> None:
    assert load_all("a: 1\n---\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]
    assert load_one("") is None


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=30,
    )
)
def test_what_pyyaml_dumps_loads_back_the_same(value: object) -> None:
    """The strict C loader reads what the safe pure-Python loader reads."""
    text = yaml.safe_dump(value)
    assert load_one(text) == yaml.safe_load(text)
