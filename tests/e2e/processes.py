"""A component of a deployment as a local process, its output in a log file."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: How long a process may take to exit after SIGTERM (then SIGKILL), and after SIGKILL.
STOP_TIMEOUT_S = 20.0


def harness_env() -> dict[str, str]:
    """This process's environment for a component, without what would point it at another
    cluster or node, and with the repository importable."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NODE_NAME")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


@dataclass
class Process:
    """One component as a local process (its own process group), its output in ``log``."""

    name: str
    argv: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    #: Seconds between SIGTERM and SIGKILL when stopping.
    grace_s: float = STOP_TIMEOUT_S

    def start(self, env: Mapping[str, str]) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env=dict(env),
                start_new_session=True,
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exited(self) -> bool:
        """Started, and no longer running."""
        return self.proc is not None and self.proc.poll() is not None

    def signal(self, signum: int) -> None:
        if self.alive():
            assert self.proc is not None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signum)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after the grace period."""
        if self.proc is None:
            return
        self.signal(signal.SIGTERM)
        self.wait()

    def wait(self) -> None:
        """Wait for the process to exit; SIGKILL it after the grace period."""
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout=self.grace_s)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.proc.wait(timeout=STOP_TIMEOUT_S)

    def kill(self) -> None:
        if self.proc is None:
            return
        self.signal(signal.SIGKILL)
        self.proc.wait(timeout=STOP_TIMEOUT_S)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self, chars: int = 3000) -> str:
        return (
            f"--- {self.name} (exit {self.proc.poll() if self.proc else None}):\n"
            + (self.output()[-chars:])
        )
