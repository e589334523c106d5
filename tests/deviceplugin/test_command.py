"""``fakenrt device-plugin`` as a process: it registers every device resource of the
profile node with a (test-side) kubelet over real unix sockets, serves until SIGTERM and
removes its sockets; bad input is a one-line error and a non-zero exit."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fakenrt.cli import main
from tests.deviceplugin.test_server import WAIT, FakeKubelet

PROFILE = """\
nodes:
- name: gpu
  devices: {example.com/license: 1}
  shape:
    numaNodes: 2
    coresPerNumaNode: 2
    memoryPerNumaNode: 4Gi
    devicesPerNumaNode: {nvidia.com/gpu: {count: 2, unhealthy: 1}}
"""


@pytest.fixture
def plugin_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="dpc-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_serves_every_resource_until_sigterm(plugin_dir: Path) -> None:
    profile = plugin_dir / "p.yaml"
    profile.write_text(PROFILE)
    kubelet = FakeKubelet(plugin_dir)
    fakenrt = Path(sys.executable).parent / "fakenrt"
    proc = subprocess.Popen(
        [str(fakenrt), "device-plugin", "--profile", str(profile), "--dir", str(plugin_dir)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        names = {kubelet.registered.get(timeout=WAIT).resource_name for _ in range(2)}
        assert names == {"example.com/license", "nvidia.com/gpu"}
        lists = [kubelet.lists.get(timeout=WAIT) for _ in range(2)]
        gpus = next(devices for devices in lists if len(devices) == 4)
        assert gpus == [
            ("GPU-0", "Healthy", [0]),
            ("GPU-1", "Unhealthy", [0]),
            ("GPU-2", "Healthy", [1]),
            ("GPU-3", "Unhealthy", [1]),
        ]
        assert [("LICENSE-0", "Healthy", [])] in lists
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=WAIT)
        assert proc.returncode == 0, err
        assert "serving nvidia.com/gpu on" in err
        assert sorted(p.name for p in plugin_dir.glob("*.sock")) == ["kubelet.sock"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kubelet.stop()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--resource", "rdma/hca"], "has no devices of 'rdma/hca'", id="no-such"),
        pytest.param(["--node", "other"], "--node 'other': no such node in ", id="no-such-node"),
    ],
)
def test_bad_input_is_one_line_and_fails(
    *, plugin_dir: Path, args: list[str], message: str
) -> None:
    profile = plugin_dir / "p.yaml"
    profile.write_text(PROFILE)
    result = CliRunner().invoke(
        main, ["device-plugin", "--profile", str(profile), "--dir", str(plugin_dir), *args]
    )
    assert result.exit_code == 1
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_no_kubelet_fails(plugin_dir: Path) -> None:
    profile = plugin_dir / "p.yaml"
    profile.write_text(PROFILE)
    result = CliRunner().invoke(
        main,
        ["device-plugin", "--profile", str(profile), "--dir", str(plugin_dir),
         "--resource", "nvidia.com/gpu", "--register-timeout", "0.5"],
    )  # fmt: skip
    assert result.exit_code == 1
    assert "registration with" in result.stderr
    assert not list(plugin_dir.glob("*.sock"))
