"""Fixtures for the exporter's tests: short unix-socket paths, sysfs trees, a fake
podresources server."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from exporter.sysfs import write_fixture
from tests.exporter.fake_podresources import FakePodResources

#: The test node: 2 NUMA nodes with 8 CPUs each; CPUs 16+ are unknown to sysfs.
TWO_NODES = {0: "0-7", 1: "8-15"}


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short directory for unix sockets (sun_path is limited to 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="nx-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def sysfs_root(tmp_path: Path) -> Path:
    root = tmp_path / "sys"
    write_fixture(root, TWO_NODES)
    return root


@pytest.fixture
def fake_kubelet(short_dir: Path) -> Iterator[FakePodResources]:
    fake = FakePodResources(short_dir / "kubelet.sock")
    fake.start()
    yield fake
    fake.stop()
