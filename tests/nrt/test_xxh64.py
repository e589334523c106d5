"""XXH64 against the published digests of the xxHash reference sanity check."""

from __future__ import annotations

import pytest

from fakenrt.nrt.xxh64 import xxh64

PRIME32 = 2654435761


def _sanity_buffer(size: int = 101) -> bytes:
    """The buffer xxHash's own sanity test hashes: bytes from repeated 32-bit squaring."""
    out = bytearray()
    gen = PRIME32
    for _ in range(size):
        out.append(gen >> 24)
        gen = (gen * gen) & 0xFFFFFFFF
    return bytes(out)


SANITY = _sanity_buffer()


@pytest.mark.parametrize(
    ("data", "seed", "digest"),
    [
        # xxHash reference sanity check (bench.c / xxhsum), 64-bit variant
        pytest.param(b"", 0, 0xEF46DB3751D8E999, id="empty"),
        pytest.param(b"", PRIME32, 0xAC75FDA2929B17EF, id="empty-seeded"),
        pytest.param(SANITY[:1], 0, 0x4FCE394CC88952D8, id="1-byte"),
        pytest.param(SANITY[:1], PRIME32, 0x739840CB819FA723, id="1-byte-seeded"),
        pytest.param(SANITY[:14], 0, 0xCFFA8DB881BC3A3D, id="14-bytes"),
        pytest.param(SANITY[:14], PRIME32, 0x5B9611585EFCC9CB, id="14-bytes-seeded"),
        pytest.param(SANITY, 0, 0x0EAB543384F878AD, id="101-bytes"),
        pytest.param(SANITY, PRIME32, 0xCAA65939306F1E21, id="101-bytes-seeded"),
        # widely published digests of short strings
        pytest.param(b"a", 0, 0xD24EC4F1A98C6E5B, id="a"),
        pytest.param(b"abc", 0, 0x44BC2CF5AD770999, id="abc"),
        pytest.param(
            b"Nobody inspects the spammish repetition", 0, 0xFBCEA83C8A378BF1, id="spammish"
        ),
    ],
)
def test_known_digests(data: bytes, seed: int, digest: int) -> None:
    assert xxh64(data, seed) == digest


def test_seed_is_taken_modulo_2_64() -> None:
    assert xxh64(b"abc", seed=-1) == xxh64(b"abc", seed=2**64 - 1)
