"""The environments users install, for tests that run the commands as users do: the
virtualenv ``make demo`` builds (the ``fakenrt`` extra) and the one ``pip install
numa-testkit`` gives (no extra). Built by ``tests/setup/venv.sh``; ``make pytest`` builds
them first and passes their paths in ``NUMA_TESTKIT_RUNTIME_VENV`` and
``NUMA_TESTKIT_BASE_VENV``, otherwise the first test that needs one builds it."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_SCRIPT = ROOT / "tests" / "setup" / "venv.sh"
_VARIABLES = {"runtime": "NUMA_TESTKIT_RUNTIME_VENV", "base": "NUMA_TESTKIT_BASE_VENV"}


@cache
def venv(kind: str) -> Path:
    """The virtualenv ``kind`` (``runtime``: make demo's; ``base``: no extra)."""
    given = os.environ.get(_VARIABLES[kind])
    if given:
        return Path(given)
    done = subprocess.run(
        [str(_SCRIPT), kind],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHON": os.environ.get("PYTHON", "python3")},
        stderr=sys.stderr,
    )
    return Path(done.stdout.strip().splitlines()[-1])


def runtime_venv() -> Path:
    return venv("runtime")


def base_venv() -> Path:
    return venv("base")
