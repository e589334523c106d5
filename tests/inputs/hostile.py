"""Hostile inputs for the commands' suite (tests/inputs/test_hostile_cli.py): the files,
names, numbers, addresses and paths a new user (or a script gone wrong) hands to a
command, and a runner that starts the real console script under resource limits.

A refusal is correct when the process exits non-zero within its CPU and memory limits
(RLIMIT_CPU, RLIMIT_AS: a command that loops or grows is killed by the kernel, never
timed by the test), writes exactly one line on stderr that starts with ``Error:``, names
the place (the option, the environment variable or the file) and quotes at most a
bounded part of what it was given, and no traceback.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

#: Limits of every run: CPU seconds and address space. A refusal needs a fraction of
#: either; a command that hangs in a loop or grows with its input hits them.
CPU_LIMIT_S = 30
MEMORY_LIMIT = 1536 * 2**20
#: Only so that the suite never hangs on a daemon that took a hostile value and runs:
#: such a run is a failure ("accepted"), however long it would have run.
HANG_GUARD_S = 90.0
#: The longest error line accepted: a bounded quote of the input, the place, the reason.
MAX_LINE = 1000
#: A daemon that keeps serving on a bad input is watched until it says so, at most this
#: long (a loaded machine starts it slowly), and this much longer once it has.
OBSERVE_CAP_S = 60.0
OBSERVE_AFTER_S = 1.0

BIN = Path(sys.prefix) / "bin"


@dataclass(frozen=True)
class Outcome:
    returncode: int | None  # None: still running at the guard (killed)
    stdout: str
    stderr: str
    signal_name: str | None = None
    #: with stop_when: it was still running when SIGTERM was sent
    ran: bool = False

    def kept_problems(self, place: str) -> list[str]:
        """What is wrong with a daemon that should keep serving on this input, logging
        bounded lines that name it, and stop cleanly on SIGTERM."""
        found = []
        if not self.ran:
            found.append(f"exited (status {self.returncode}) instead of serving on")
        if self.returncode not in (0, None) and self.ran:
            found.append(f"status {self.returncode} after SIGTERM")
        if "Traceback" in self.stderr:
            found.append("a traceback")
        long = [line for line in self.stderr.splitlines() if len(line) > MAX_LINE]
        if long:
            found.append(f"{len(long)} log lines longer than {MAX_LINE} characters")
        if place not in self.stderr:
            found.append(f"the place {place!r} is not named")
        return found

    def problems(self, place: str) -> list[str]:
        """What is wrong with this run as the refusal of a hostile input at ``place``."""
        found = []
        if self.returncode is None:
            return [f"still running after {HANG_GUARD_S:.0f} s: the input was accepted"]
        if self.signal_name:
            found.append(f"killed by {self.signal_name} (a resource limit)")
        if self.returncode == 0:
            found.append("exit status 0: the input was accepted")
        lines = self.stderr.splitlines()
        if "Traceback" in self.stderr:
            found.append("a traceback")
        if len(lines) != 1:
            found.append(f"{len(lines)} lines on stderr")
        if lines and not lines[0].startswith("Error: "):
            found.append("the line does not start with 'Error: '")
        if len(self.stderr) > MAX_LINE:
            found.append(f"{len(self.stderr)} characters on stderr")
        if place not in self.stderr:
            found.append(f"the place {place!r} is not named")
        return found


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_S, CPU_LIMIT_S + 5))
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    os.setsid()


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stop_when: str | None = None,
) -> Outcome:
    """The console script ``argv[0]`` (of this virtualenv) with ``argv[1:]``, under the
    limits; stdin is /dev/null. With ``stop_when``, a daemon is watched serving on: SIGTERM
    once its stderr shows that text (it has read what is checked and said so) or after
    :data:`OBSERVE_CAP_S`, whichever comes first, if it still runs."""
    full_env = {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(cwd or Path.cwd()),
        "LANG": "C.UTF-8",
        **(env or {}),
    }
    proc = subprocess.Popen(
        [str(BIN / argv[0]), *argv[1:]],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
        cwd=cwd,
        preexec_fn=_limits,  # noqa: PLW1509 - limits and a session of its own, nothing else
    )
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []
    readers = [
        threading.Thread(target=_drain, args=(proc.stdout, out_chunks), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, err_chunks), daemon=True),
    ]
    for reader in readers:
        reader.start()
    ran = False
    if stop_when is not None:
        deadline = time.monotonic() + OBSERVE_CAP_S
        seen = stop_when.encode()
        while proc.poll() is None and time.monotonic() < deadline:
            if seen in b"".join(err_chunks):
                time.sleep(OBSERVE_AFTER_S)  # and a little more of its serving
                break
            time.sleep(0.1)
        if proc.poll() is None:
            ran = True
            proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=HANG_GUARD_S)
        killed = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        killed = True
    for reader in readers:
        reader.join()
    out = b"".join(out_chunks).decode(errors="replace")
    err = b"".join(err_chunks).decode(errors="replace")
    if killed:
        return Outcome(None, out, err)
    name = signal.Signals(-proc.returncode).name if proc.returncode < 0 else None
    return Outcome(proc.returncode, out, err, name, ran)


def _drain(stream: IO[bytes] | None, chunks: list[bytes]) -> None:
    if stream is None:
        return
    while chunk := stream.read1(65536):  # type: ignore[attr-defined]
        chunks.append(chunk)


@dataclass(frozen=True)
class Hostile:
    """One hostile value of an input class: ``make(dir)`` returns the argument (a path for
    file classes); ``place`` says what the error line must name (``{value}`` is the
    argument, ``{option}`` the option)."""

    id: str
    make: Callable[[Path], str]
    place: str = "{option}"
    #: given through this environment variable instead of the option (numa-exporter's)
    env: bool = False
    notes: Mapping[str, str] = field(default_factory=dict)


def _file(name: str, content: bytes) -> Callable[[Path], str]:
    def make(directory: Path) -> str:
        path = directory / name
        if not path.exists():
            path.write_bytes(content)
        return str(path)

    return make


def _fifo(directory: Path) -> str:
    path = directory / "fifo-without-writer"
    if not path.exists():
        os.mkfifo(path)
    return str(path)


def _const(value: str) -> Callable[[Path], str]:
    return lambda _directory: value


def _in(name: str) -> Callable[[Path], str]:
    return lambda directory: str(directory / name)


#: 8 MiB is the most any command reads from one file.
_MIB = 2**20
_ALIASES = b"a: &a [x, x, x, x, x, x, x, x, x, x]\n" + b"".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}]\n".encode()
    for i in range(9)
)

#: Hostile contents and paths for an option that reads a YAML (or JSON) file.
FILES = [
    Hostile("missing", _in("no-such-file.yaml"), "{value}"),
    Hostile("directory", str, "{value}"),
    Hostile("dev-null", _const("/dev/null"), "/dev/null"),
    Hostile("dev-zero", _const("/dev/zero"), "/dev/zero"),
    Hostile("fifo-without-writer", _fifo, "{value}"),
    Hostile("binary", _file("binary.yaml", b"nodes: []\n\0\0\x7fELF"), "{value}"),
    Hostile("not-utf8", _file("latin1.yaml", b"nodes:\n- name: caf\xe9\n"), "{value}"),
    Hostile("9-mib", _file("9mib.yaml", b"#" * (9 * _MIB)), "{value}"),
    Hostile("7-mb-one-line", _file("7mb-line.yaml", b"a" * 7_000_000 + b"\n"), "{value}"),
    Hostile("7-mb-one-key", _file("7mb-key.yaml", b"a" * 7_000_000 + b": 1\n"), "{value}"),
    Hostile("deep-nesting", _file("deep.yaml", b"[" * 900 + b"]" * 900 + b"\n"), "{value}"),
    Hostile("alias-bomb", _file("aliases.yaml", _ALIASES), "{value}"),
    Hostile("many-values", _file("many.yaml", b"[" + b"0," * 3_000_000 + b"0]\n"), "{value}"),
    Hostile("duplicate-keys", _file("dup.yaml", b"nodes: []\nnodes: []\n"), "{value}"),
    Hostile("a-list", _file("list.yaml", b"- 1\n- 2\n"), "{value}"),
    Hostile("not-yaml", _file("broken.yaml", b"a: [\n"), "{value}"),
]

#: Paths given where a command writes a file.
OUTPUT_FILES = [
    Hostile("directory", str, "{value}"),
    Hostile("missing-parent", _in("no/such/dir/out"), "{value}"),
    Hostile("dev-full", _const("/dev/full"), "/dev/full"),
    Hostile("proc", _const("/proc/version"), "/proc/version"),
    Hostile("too-long", lambda d: str(d / ("x" * 300)), "{option}"),
]

#: Paths given where a command creates or serves files in a directory.
OUTPUT_DIRS = [
    Hostile("a-file", _const("/dev/null"), "/dev/null"),
    Hostile("relative", _const("relative/dir"), "{option}"),
    Hostile("missing-parent", _in("no/such/dir"), "{option}"),
    Hostile("too-long", lambda d: str(d / ("x" * 300)), "{option}"),
    Hostile("proc", _const("/proc/sys/fs"), "{option}"),
]

#: Names of API objects (nodes, namespaces, ServiceAccounts, clusters, schedulers).
NAMES = [
    Hostile("empty", _const(""), "{option}"),
    Hostile("bad-characters", _const("Bad_Name!"), "{option}"),
    Hostile("spaces", _const("Bad Name"), "{option}"),
    Hostile("newline", _const("a\nb"), "{option}"),
    Hostile("10k-characters", _const("n" * 10_000), "{option}"),
    Hostile("not-utf8", _const("n\udcff"), "{option}"),
]

#: Durations and second counts.
SECONDS = [
    Hostile("inf", _const("inf"), "{option}"),
    Hostile("nan", _const("nan"), "{option}"),
    Hostile("negative", _const("-1"), "{option}"),
    Hostile("400-digits", _const("9" * 400), "{option}"),
    Hostile("a-century", _const("3153600000"), "{option}"),
    Hostile("not-a-number", _const("soon"), "{option}"),
]

#: Integers (seeds, counts, ports).
INTEGERS = [
    Hostile("negative", _const("-1"), "{option}"),
    Hostile("5000-digits", _const("9" * 5000), "{option}"),
    Hostile("not-a-number", _const("many"), "{option}"),
]

#: host:port addresses to listen on.
ADDRESSES = [
    Hostile("port-too-large", _const(":99999"), "{option}"),
    Hostile("no-port", _const("localhost"), "{option}"),
    Hostile("unclosed-ipv6", _const("[::1:8080"), "{option}"),
    Hostile("host-10k", _const("h" * 10_000 + ":8080"), "{option}"),
    Hostile("no-such-address", _const("192.0.2.1:8080"), "{option}"),
]

#: Values of a fixed set (log levels, strategies).
CHOICES = [
    Hostile("unknown", _const("verbose"), "{option}"),
    Hostile("10k-characters", _const("v" * 10_000), "{option}"),
]
