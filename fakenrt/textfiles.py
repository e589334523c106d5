"""Reading the text files fakenrt is given (profiles, pods, NRT objects, plugin args), with
a size bound and a clear error for what is not UTF-8 text.

``/dev/zero``, a multi-gigabyte log or a binary given by mistake must not be read whole:
at most :data:`MAX_INPUT_BYTES` are read, and a larger file is refused.
"""

from __future__ import annotations

from pathlib import Path

#: The largest input file fakenrt reads (8 MiB): far above any profile, pod list or NRT
#: object (a 1000-node profile file is well under 1 MiB), small enough to parse quickly.
MAX_INPUT_BYTES = 8 * 1024 * 1024


class TextFileError(ValueError):
    """A file that cannot be read as text; the message starts with the path."""


def read_text(path: str | Path, *, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of ``path``, at most ``limit`` bytes. Raises :class:`TextFileError`
    for a missing or unreadable file, one larger than ``limit``, or one that is not UTF-8
    text (binary)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise TextFileError(f"{path}: cannot read the file: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise TextFileError(
            f"{path}: larger than {limit // (1024 * 1024)} MiB, the most fakenrt reads from one "
            "input file"
        )
    if b"\0" in data:
        raise TextFileError(f"{path}: not a text file (it contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TextFileError(
            f"{path}: not UTF-8 text (invalid byte at offset {exc.start})"
        ) from None
