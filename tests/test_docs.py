"""The README and docs/*.md stay true: every shell block that needs no cluster runs as
written, and every command synopsis names only options the command has (and, unless it
ends with ``...``, all of them). Issue 11, item 10.

Convention for fenced blocks (also stated in docs/architecture.md): a block whose info
string starts with ``sh`` is a command block, run by this test from a scratch directory
that sees the repository's files, with the virtualenv ``make demo`` builds active (its
``.venv``: the ``fakenrt`` extra and nothing of the test tools, so a command that needs
more than its install gives fails here; ``tests/installs.py``). Extra words after ``sh`` mark
blocks the test cannot run:

* ``sh cluster`` - needs a Kubernetes cluster (a kubeconfig, kubectl);
* ``sh setup`` - creates the environment this test already runs in (``make demo``,
  ``make test``).

and one word that changes where a block runs: ``sh dev`` - a tool of the test suite
(e.g. ``python -m tests.scorecard``), which needs the test tools: it runs in the
virtualenv ``make test`` builds, the one running this test.

Blocks without a language (synopses, sample output) are not run; their lines that start
with ``fakenrt`` or ``numa-exporter`` are checked against the commands' options.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_tree import Command, scripts
from tests.installs import runtime_venv

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SKIP_TAGS = {"cluster", "setup"}
#: Run in the test suite's own virtualenv, not in make demo's.
DEV_TAG = "dev"
BLOCK_TIMEOUT_S = 120
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.S | re.M)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    info: tuple[str, ...]
    text: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def _blocks() -> list[Block]:
    out = []
    for path in DOCS:
        text = path.read_text()
        for m in _FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            out.append(Block(path, line, tuple(m.group(1).split()), m.group(2)))
    return out


BLOCKS = _blocks()
COMMAND_BLOCKS = [b for b in BLOCKS if b.info[:1] == ("sh",)]
RUNNABLE = [b for b in COMMAND_BLOCKS if not SKIP_TAGS & set(b.info[1:])]
#: What a user's install runs (the project image has no test tools either).
USER_RUNNABLE = [b for b in RUNNABLE if DEV_TAG not in b.info[1:]]


def test_the_convention_is_used() -> None:
    """The tour is runnable, and every command block is tagged with known words only."""
    assert any(b.path.name == "README.md" for b in RUNNABLE)
    for block in COMMAND_BLOCKS:
        assert set(block.info[1:]) <= SKIP_TAGS | {DEV_TAG}, block.id
    for block in BLOCKS:
        assert block.info[:1] != ("bash",), f"{block.id}: write ```sh"


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_command_block_runs(block: Block, tmp_path: Path) -> None:
    venv = Path(sys.prefix) if DEV_TAG in block.info[1:] else runtime_venv()
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".venv"):
            (tmp_path / entry.name).symlink_to(entry)
    (tmp_path / ".venv").symlink_to(venv)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")},
        "PATH": f"{venv / 'bin'}{os.pathsep}{_without_venv(os.environ.get('PATH', ''))}",
        "HOME": str(tmp_path),
    }
    env.pop("KUBECONFIG", None)
    # its own session, so a block that outlives the timeout is ended with its children
    with subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", block.text],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=BLOCK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail(f"{block.id}: still running after {BLOCK_TIMEOUT_S}s")
    assert proc.returncode == 0, f"{block.id}\n{out[-3000:]}\n{err[-3000:]}"
    assert "Traceback" not in err


def _without_venv(path: str) -> str:
    """PATH without the test's own virtualenv (its tools are not what users install)."""
    own = str(Path(sys.prefix) / "bin")
    return os.pathsep.join(p for p in path.split(os.pathsep) if p != own)


def _synopses() -> list[tuple[Block, str]]:
    """Command lines of synopses (unlabelled blocks) and of every ``sh`` block."""
    found = []
    for block in BLOCKS:
        if block.info and block.info[0] != "sh":
            continue
        joined = block.text.replace("\\\n", " ")
        for raw in joined.splitlines():
            command = raw.split(" #", 1)[0].split(" > ", 1)[0].rstrip()
            if command.startswith(("fakenrt ", "numa-exporter ")):
                found.append((block, command))
    return found


SYNOPSES = _synopses()


SCRIPTS = scripts()


def _command(words: list[str]) -> tuple[Command, list[str]]:
    command = SCRIPTS[words[0]]
    rest = words[1:]
    while command.commands and rest and rest[0] in command.commands:
        command = command.commands[rest[0]]
        rest = rest[1:]
    return command, rest


@pytest.mark.parametrize(
    ("block", "line"), SYNOPSES, ids=[f"{b.id}:{line.split(' [')[0]}" for b, line in SYNOPSES]
)
def test_synopsis_matches_the_command(block: Block, line: str) -> None:
    command, rest = _command(line.split())
    assert not command.commands, f"{block.id}: {line}: no such command"
    known = {name for o in command.options for name in o.names}
    named = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", " ".join(rest)))
    assert named <= known, f"{block.id}: {line}: unknown options {sorted(named - known)}"
    if not block.info and not line.endswith("..."):
        missing = [o.names[0] for o in command.options if not o.hidden and not set(o.names) & named]
        assert not missing, f"{block.id}: {line}: synopsis lacks {missing}"
