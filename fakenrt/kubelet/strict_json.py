"""JSON text as the simulator's codecs read it (allocation annotations, Memory Manager
checkpoints): an object naming a key twice is refused - ``json.loads`` would keep the last
value silently - and so is nesting too deep to parse, each as the codec's own error. Pure."""

from __future__ import annotations

import json
from typing import Any


def loads_strict(text: str, error: type[ValueError]) -> Any:
    """``json.loads(text)``; ``error`` for text that is not JSON, nests too deep, or has an
    object with a repeated key (the message names the key)."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise error(f"field {key!r} appears twice")
            out[key] = value
        return out

    try:
        return json.loads(text, object_pairs_hook=unique)
    except error:
        raise
    except (ValueError, RecursionError) as exc:
        raise error(f"not JSON: {exc}") from None
