"""Stop signals taken by the main thread with sigwait, blocked in every thread: each
case runs in a process of its own (it changes the process's signal mask)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHILD = """
import sys, threading, time
import signal
from exporter import stopsignals
with stopsignals.blocked():
    started = threading.Event()
    threading.Thread(target=lambda: (started.set(), time.sleep(60)), daemon=True).start()
    started.wait()
    print("timeout:", stopsignals.wait(0.05), flush=True)
    print("ready", flush=True)
    print("received:", stopsignals.wait().name, flush=True)
# the block ends: the main thread's mask is as before
print("unblocked:", not signal.pthread_sigmask(signal.SIG_BLOCK, []), flush=True)
"""


def _worker_masks(pid: int) -> list[int]:
    masks = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        if task.name != str(pid):
            status = (task / "status").read_text()
            masks.append(int(status.split("SigBlk:", 1)[1].split()[0], 16))
    return masks


def test_a_stop_signal_reaches_the_waiting_main_thread_and_no_other() -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD], cwd=REPO, stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == "timeout: None\n"  # the timed wait ends empty
        assert proc.stdout.readline() == "ready\n"
        masks = _worker_masks(proc.pid)
        assert masks, "the child's worker thread"
        for mask in masks:  # the worker inherited the stop signals blocked
            assert mask >> (signal.SIGTERM - 1) & 1 and mask >> (signal.SIGINT - 1) & 1
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
        assert out == f"received: {sig.name}\nunblocked: True\n"
        assert proc.returncode == 0
