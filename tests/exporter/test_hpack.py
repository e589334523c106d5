"""``exporter.hpack`` against RFC 7541's own examples (Appendix C) and its code table."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.hpack import (
    Decoder,
    HpackError,
    encode,
    huffman_codes,
    huffman_decode,
    huffman_encode,
)


def test_huffman_table_matches_rfc_7541_appendix_b() -> None:
    codes = huffman_codes()
    assert len(codes) == 257
    # a sample of the printed table, across every code length
    assert codes[0] == (0x1FF8, 13)
    assert codes[1] == (0x7FFFD8, 23)
    assert codes[ord(" ")] == (0x14, 6)
    assert codes[ord("0")] == (0x0, 5)
    assert codes[ord(":")] == (0x5C, 7)
    assert codes[92] == (0x7FFF0, 19)
    assert codes[128] == (0xFFFE6, 20)
    assert codes[199] == (0x1FFFFEC, 25)
    assert codes[255] == (0x3FFFFEE, 26)
    assert codes[256] == (0x3FFFFFFF, 30)  # EOS
    assert sum(2.0**-length for _, length in codes.values()) == 1.0  # a complete code


@pytest.mark.parametrize(
    ("encoded", "text"),
    [
        pytest.param("f1e3c2e5f23a6ba0ab90f4ff", b"www.example.com", id="C.4.1"),
        pytest.param("a8eb10649cbf", b"no-cache", id="C.4.2"),
        pytest.param("25a849e95ba97d7f", b"custom-key", id="C.4.3-name"),
        pytest.param("25a849e95bb8e8b4bf", b"custom-value", id="C.4.3-value"),
        pytest.param("6402", b"302", id="C.6.1-status"),
        pytest.param("aec3771a4b", b"private", id="C.6.1-cache-control"),
    ],
)
def test_huffman_rfc_examples(encoded: str, text: bytes) -> None:
    assert huffman_decode(bytes.fromhex(encoded)) == text
    assert huffman_encode(text) == bytes.fromhex(encoded)


@given(st.binary(max_size=40))
def test_huffman_round_trip(data: bytes) -> None:
    assert huffman_decode(huffman_encode(data)) == data


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"\x00", id="padding-not-ones"),
        pytest.param(b"\xff\xff\xff\xff", id="eos-inside"),
        pytest.param(b"\x1f\xff", id="padding-longer-than-7-bits"),
    ],
)
def test_huffman_refuses_bad_strings(data: bytes) -> None:
    with pytest.raises(HpackError):
        huffman_decode(data)


def test_rfc_7541_c4_requests_with_the_dynamic_table() -> None:
    decoder = Decoder()
    assert decoder.decode(bytes.fromhex("828684418cf1e3c2e5f23a6ba0ab90f4ff")) == [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "www.example.com"),
    ]
    assert decoder.decode(bytes.fromhex("828684be5886a8eb10649cbf"))[-1] == (
        "cache-control",
        "no-cache",
    )
    assert decoder.decode(bytes.fromhex("828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf")) == [
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/index.html"),
        (":authority", "www.example.com"),
        ("custom-key", "custom-value"),
    ]


def test_table_size_updates_and_bad_indexes() -> None:
    decoder = Decoder()
    decoder.decode(bytes.fromhex("400a637573746f6d2d6b65790d637573746f6d2d686561646572"))
    assert decoder.decode(bytes([0x80 | 62])) == [("custom-key", "custom-header")]
    decoder.decode(bytes([0x20]))  # size 0: the entry is evicted
    with pytest.raises(HpackError, match="not in the tables"):
        decoder.decode(bytes([0x80 | 62]))
    with pytest.raises(HpackError, match="above the announced maximum"):
        decoder.decode(bytes([0x3F, 0xE1, 0x3F]))  # 4097 + ...


@given(st.lists(st.tuples(st.text("abc-:", min_size=1), st.text("xyz 0/"))))
def test_encoded_requests_decode_back(headers: list[tuple[str, str]]) -> None:
    assert Decoder().decode(encode(headers)) == headers
