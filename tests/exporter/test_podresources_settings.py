"""gRPC's core set up for one small call a second (``exporter.podresources_settings``).

``GRPC_EXPERIMENTS`` names grpc experiments, which grpc releases may retire: these tests
fail when the installed grpcio no longer knows the ones the exporter turns off, or no
longer lets them move the channel's socket off the EventEngine's thread pool, so the
setting is looked at again (and measured: ``benchmarks/bench_exporter.py``) rather than
silently ignored."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from exporter.podresources_settings import (
    GRPC_EXPERIMENTS,
    GrpcAlreadyImported,
    configure_grpc_core,
)
from tests.exporter.fake_podresources import FakePodResources

REPO = Path(__file__).resolve().parents[2]

CALL = """
import sys
from pathlib import Path
from exporter.podresources_settings import configure_grpc_core
configure_grpc_core()
from exporter.podresources_client import PodResourcesClient
client = PodResourcesClient(Path(sys.argv[1]))
for _ in range(3):
    client.list_raw()
client.close()
"""


def _call_traced(socket: Path, **environ: str) -> str:
    """stderr of a fresh process making three List calls with grpc's endpoint traces on."""
    env = dict(os.environ, GRPC_VERBOSITY="debug", GRPC_TRACE="tcp,event_engine_endpoint")
    env.pop("GRPC_EXPERIMENTS", None)
    env.update(environ)
    out = subprocess.run(
        [sys.executable, "-c", CALL, str(socket)],
        check=False, capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stderr


def test_the_experiments_are_known_and_move_the_socket_off_the_event_engine(
    fake_kubelet: FakePodResources,
) -> None:
    traced = _call_traced(fake_kubelet.socket_path)
    assert "nknown experiment" not in traced, traced[-3000:]
    # iomgr's endpoint (read by the polling caller), not the EventEngine's
    assert "tcp_posix.cc" in traced
    assert "posix_endpoint.cc" not in traced
    # and the trace tells them apart: grpc's default is the EventEngine endpoint
    default = _call_traced(fake_kubelet.socket_path, GRPC_EXPERIMENTS="")
    assert "posix_endpoint.cc" in default
    assert "tcp_posix.cc" not in default


def test_an_operators_own_setting_wins() -> None:
    environ = {"GRPC_EXPERIMENTS": "-event_engine_client"}
    configure_grpc_core_elsewhere(environ)
    assert environ == {"GRPC_EXPERIMENTS": "-event_engine_client"}
    environ = {}
    configure_grpc_core_elsewhere(environ)
    assert environ == {"GRPC_EXPERIMENTS": GRPC_EXPERIMENTS}


def configure_grpc_core_elsewhere(environ: dict[str, str]) -> None:
    """``configure_grpc_core`` as in a process that has not imported grpc (this test
    process has)."""
    grpc = sys.modules.pop("grpc")
    try:
        configure_grpc_core(environ)
    finally:
        sys.modules["grpc"] = grpc


def test_too_late_once_grpc_is_imported() -> None:
    import grpc  # noqa: F401  (the test process has it already)

    with pytest.raises(GrpcAlreadyImported, match="before its import"):
        configure_grpc_core({})
