"""The project image runs every documented command (issue 21, item 2): the README's and
docs' runnable command blocks (those tests/test_docs.py runs in the virtualenv `make demo`
builds) run as written inside the image built by kind/image.sh, as its default user, and
every command of both console scripts answers ``--help`` there - so an import the image
lacks fails here, not on a node.

Needs Docker and the image (the session's Kind cluster builds and loads it; only the
image is used here)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_tree import scripts
from tests.kind.cluster import REPO_ROOT, KindCluster, _lib_value
from tests.test_docs import USER_RUNNABLE, Block

pytestmark = [pytest.mark.kind, pytest.mark.timeout(900)]

#: What the blocks read (and the harness block writes), copied for the container.
COPIED = ("fakenrt/examples", "manifests")


@pytest.fixture(scope="module")
def image(kind: KindCluster) -> str:
    """The project image the session's cluster was brought up with."""
    return _lib_value("PROJECT_IMAGE")


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """A working directory the image's user (nobody) can write, with what the blocks
    read and an empty ``.venv/bin/activate`` (the image's commands are on its PATH)."""
    work = tmp_path / "work"
    for part in COPIED:
        shutil.copytree(REPO_ROOT / part, work / part, symlinks=False)
    (work / ".venv" / "bin").mkdir(parents=True)
    (work / ".venv" / "bin" / "activate").write_text("")
    for path in [work, *work.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    yield work


def _in_image(image: str, work: Path, script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "docker", "run", "--rm", "--network=none", "-v", f"{work}:/work", "-w", "/work",
            "-e", "HOME=/work", "--entrypoint", "bash", image, "-euo", "pipefail", "-c", script,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )  # fmt: skip


@pytest.mark.parametrize("block", USER_RUNNABLE, ids=[b.id for b in USER_RUNNABLE])
def test_a_documented_block_runs_in_the_image(image: str, scratch: Path, block: Block) -> None:
    done = _in_image(image, scratch, block.text)
    assert done.returncode == 0, f"{block.id}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr


def test_every_command_answers_help_in_the_image(image: str, scratch: Path) -> None:
    lines = []
    for script, tree in scripts().items():
        for path, _ in tree.walk(script):
            lines.append(f"{path} --help >/dev/null || echo 'FAILED: {path}'")
    done = _in_image(image, scratch, "\n".join(lines))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "FAILED" not in done.stdout, done.stdout + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
