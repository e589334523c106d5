"""Stopping a daemon on SIGTERM (the kubelet's) or SIGINT without a Python signal handler.

A handler is fragile in a threaded daemon: the kernel may hand a signal sent to the
process to any thread that does not block it, while a Python handler runs only when the
main thread runs Python code (a main thread asleep in a wait can sleep through it), and
a handler that sets a ``threading.Event`` can deadlock on the event's own lock when it
runs in the middle of that event's ``wait``. Instead the signals are blocked in every
thread - :func:`blocked` entered before the first thread starts, threads inherit the
mask - and
the main thread takes them with :func:`wait` (``sigwait`` / ``sigtimedwait``), as its
sleep. Linux only (the exporter's platform), as ``sigtimedwait`` is.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

#: The signals that stop a daemon.
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})


@contextlib.contextmanager
def blocked() -> Iterator[None]:
    """The stop signals blocked in the calling thread, and in every thread it starts
    meanwhile (threads inherit the mask), until the block ends: then the calling thread's
    mask is what it was (a command run in-process, by a test, leaves no trace)."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def wait(timeout_s: float | None = None) -> signal.Signals | None:
    """Sleep until a stop signal arrives or ``timeout_s`` passes (None: no limit); the
    signal, or None after the timeout. Call it inside :func:`blocked`, entered before any
    thread was started, so that no other thread can take the signal."""
    with blocked():
        if timeout_s is None:
            return signal.Signals(signal.sigwait(STOP_SIGNALS))
        info = signal.sigtimedwait(STOP_SIGNALS, max(0.0, timeout_s))
        return None if info is None else signal.Signals(info.si_signo)
