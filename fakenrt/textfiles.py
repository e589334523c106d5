"""Reading the text files fakenrt is given (profiles, pods, NRT objects, plugin args, the
kubelet's configuration), bounded in size and time, with a one-line error for what is
not UTF-8 text.

* At most ``limit`` bytes are read (:data:`MAX_INPUT_BYTES` by default): ``/dev/zero``,
  a multi-gigabyte log or a binary given by mistake is refused, never read whole.
* A directory is refused by name; so is a file that is not UTF-8 text (binary, NUL
  bytes, Latin-1).
* A pipe (``--pod <(kubectl get pod p -o yaml)``, ``/dev/stdin``) or a device is read
  as it arrives, but waits for data at most :data:`WAIT_S` at a time: a FIFO nobody
  writes to is refused instead of hanging the command.
"""

from __future__ import annotations

import os
import select
import stat
from pathlib import Path

from exporter.validation import quoted

#: The largest input file fakenrt reads (8 MiB): far above any profile, pod list or NRT
#: object (a 1000-node profile file is well under 1 MiB), small enough to parse quickly.
MAX_INPUT_BYTES = 8 * 1024 * 1024
#: The longest wait for the next data of a pipe or device (seconds).
WAIT_S = 10.0
#: Paths are at most PATH_MAX (4096) bytes.
MAX_PATH_BYTES = 4096


class TextFileError(ValueError):
    """A file that cannot be read as text; the message starts with the path."""


def _read_stream(fd: int, limit: int, path: str) -> bytes:
    """Up to ``limit + 1`` bytes of a pipe or device, waiting at most WAIT_S for each."""
    chunks: list[bytes] = []
    size = 0
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while size <= limit:
        if not poller.poll(WAIT_S * 1000):
            raise TextFileError(f"{path}: no data for {WAIT_S:g} s (a pipe nobody writes to?)")
        chunk = os.read(fd, min(65536, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_bytes(path: str | Path, *, limit: int = MAX_INPUT_BYTES) -> bytes:
    """At most ``limit + 1`` bytes of ``path`` (a larger file is refused by the caller or
    :func:`read_text`). Raises :class:`TextFileError` naming the path."""
    name = str(path)
    if len(os.fsencode(name)) > MAX_PATH_BYTES:
        raise TextFileError(f"{quoted(name)}: a path is at most {MAX_PATH_BYTES} bytes")
    try:
        # O_NONBLOCK: opening a FIFO without a writer must not block; reads of pipes and
        # devices are then waited for with poll, bounded
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise TextFileError(f"{name}: cannot read the file: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise TextFileError(f"{name}: is a directory, not a file")
        if stat.S_ISREG(mode):
            os.set_blocking(fd, True)
            with os.fdopen(fd, "rb", closefd=False) as handle:
                return handle.read(limit + 1)
        return _read_stream(fd, limit, name)
    except OSError as exc:
        raise TextFileError(f"{name}: cannot read the file: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit // 1024} KiB"


def read_text(path: str | Path, *, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of ``path``, at most ``limit`` bytes. Raises :class:`TextFileError`
    for a missing or unreadable file, a directory, one larger than ``limit``, one that is
    not UTF-8 text (binary), or a pipe that stays silent."""
    data = read_bytes(path, limit=limit)
    if len(data) > limit:
        raise TextFileError(
            f"{path}: larger than {_size(limit)}, the most fakenrt reads from one input file"
        )
    if b"\0" in data:
        raise TextFileError(f"{path}: not a text file (it contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TextFileError(
            f"{path}: not UTF-8 text (invalid byte at offset {exc.start})"
        ) from None
