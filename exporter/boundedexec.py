"""Run a kubeconfig exec credential plugin within bounds, for the kubernetes library.

The library's ``ExecProvider`` reads a plugin's output whole and waits for it forever: a
plugin that prints 3 GB grows the process to MemoryError, one that hangs hangs the
client. ``exporter.kubetoken`` therefore has the library run this script, which runs the
plugin and passes its output on only if it stays within the bounds:

* stdout at most ``MAX_BYTES`` and UTF-8 text (an ExecCredential is a few KiB);
* the plugin's stderr is kept as its last 4 KiB (passed on when it fails), or goes
  straight to the terminal when the plugin runs interactively (stderr is a terminal);
* finished within ``TIMEOUT_S`` (5 minutes when interactive: a login prompt), else its
  process group is killed.

On a breach it exits 1 and writes the reason, one line, to ``REPORT`` (a file the caller
reads: the library's own error is only "process returned 1"); a plugin that fails exits
with the plugin's status, its stderr's tail on stderr.

Usage: ``python -I -S boundedexec.py MAX_BYTES TIMEOUT_S REPORT -- COMMAND [ARG...]``.
Standard library only, and no package imports: it runs in isolated mode (``-I -S``), so
nothing on the caller's path is imported (and start-up costs ~10 ms).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading

STDERR_TAIL = 4096
INTERACTIVE_TIMEOUT_S = 300.0


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):  # already gone
        os.killpg(proc.pid, signal.SIGKILL)


def _report(path: str, reason: str) -> int:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(" ".join(reason.split())[:1000])
    return 1


def run(max_bytes: int, timeout_s: float, report: str, command: list[str]) -> int:
    interactive = sys.stderr.isatty()
    if interactive:
        timeout_s = max(timeout_s, INTERACTIVE_TIMEOUT_S)
    try:
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=None if interactive else subprocess.PIPE,
            start_new_session=True,  # its own process group: killed whole on a breach
        )
    except OSError as exc:
        return _report(report, f"cannot run it: {exc.strerror or exc}")
    out = bytearray()
    err = bytearray()
    overflow = threading.Event()

    def read_stdout() -> None:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while chunk := os.read(fd, 65536):
            out.extend(chunk)
            if len(out) > max_bytes:
                overflow.set()
                _kill(proc)
                return

    def read_stderr() -> None:
        assert proc.stderr is not None
        fd = proc.stderr.fileno()
        while chunk := os.read(fd, 65536):
            err.extend(chunk)
            del err[:-STDERR_TAIL]

    readers = [threading.Thread(target=read_stdout, daemon=True)]
    if proc.stderr is not None:
        readers.append(threading.Thread(target=read_stderr, daemon=True))
    for reader in readers:
        reader.start()
    try:
        code = proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        _kill(proc)
        proc.wait()
        return _report(report, f"did not finish within {timeout_s:g} s; stopped")
    for reader in readers:
        reader.join(2.0)  # a grandchild may hold the pipes open: do not wait for it
    if overflow.is_set():
        return _report(report, f"printed more than {max_bytes} bytes; stopped")
    tail = bytes(err).decode("utf-8", errors="replace").strip()
    if code != 0:
        last = tail.splitlines()[-1] if tail else ""
        _report(report, f"exited {code}" + (f": {last[-300:]}" if last else ""))
        sys.stderr.write(tail[-STDERR_TAIL:])
        return code if code > 0 else 1
    try:
        text = bytes(out).decode("utf-8")
    except UnicodeDecodeError as exc:
        return _report(report, f"printed something that is not UTF-8 text (offset {exc.start})")
    sys.stdout.write(text)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) < 6 or argv[4] != "--":
        sys.stderr.write("usage: boundedexec.py MAX_BYTES TIMEOUT_S REPORT -- COMMAND [ARG...]\n")
        return 2
    return run(int(argv[1]), float(argv[2]), argv[3], argv[5:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
