"""Running an adapter's build: its script, once per process, or the directory an
override variable names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TextIO

from schedulers.adapter import Build

REPO = Path(__file__).resolve().parents[1]
_built: dict[Path, Path] = {}


class BuildError(RuntimeError):
    """A build script failed or printed no directory; the message names it."""


def binaries(build: Build, *, progress: TextIO | None = None) -> Path:
    """The directory of ``build``'s binaries: ``$<override_env>`` when set, else what the
    script prints (it builds on first use; its stderr goes to ``progress``, default this
    process's stderr). Raises BuildError."""
    if build.override_env and os.environ.get(build.override_env):
        found = Path(os.environ[build.override_env])
        if not found.is_dir():
            raise BuildError(f"${build.override_env}={found} is not a directory")
        return found
    script = build.script if build.script.is_absolute() else REPO / build.script
    if script in _built:
        return _built[script]
    out = progress or sys.stderr
    try:
        out.fileno()
        stderr: TextIO | int = out
    except (OSError, ValueError, AttributeError):  # a capture without a descriptor
        stderr = subprocess.PIPE
    proc = subprocess.run(
        [str(script)], cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True, check=False
    )
    if stderr == subprocess.PIPE and proc.stderr:
        out.write(proc.stderr)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise BuildError(f"{script} failed (exit {proc.returncode}, building {build.summary})")
    found = Path(lines[-1])
    if not found.is_dir():
        raise BuildError(f"{script} printed {found}, which is not a directory")
    _built[script] = found
    return found


def main(argv: list[str] | None = None) -> int:
    """``python -m schedulers.building [NAMES]``: build (or reuse) the binaries of every
    adapter in schedulers/ - or of the schedulers NAMES picks (comma-separated names or
    adapter ids, as the scorecard's ``--scheduler``) - each build script once, and print
    ``<script> <directory>`` per build. Exits 1 naming the first build that failed, 2 for
    an unknown name."""
    from schedulers.registry import ALL, select

    args = sys.argv[1:] if argv is None else argv
    names = [n.strip() for a in args for n in a.split(",") if n.strip()] or [ALL]
    try:
        picked = select(names, every_mode=True)
    except ValueError as exc:
        print(f"schedulers.building: {exc}", file=sys.stderr)
        return 2
    builds = {a.build.script: a.build for a in picked if a.build is not None}
    for script, build in builds.items():
        try:
            print(script, binaries(build), flush=True)
        except BuildError as exc:
            print(f"schedulers.building: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
