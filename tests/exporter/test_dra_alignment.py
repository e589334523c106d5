"""The one definition of a misaligned container (exporter.dra_alignment), as a table."""

from __future__ import annotations

import pytest

from exporter.dra_alignment import DraPlacement, misalignment


def _gpu(numa: int | None, device: str = "gpu-0") -> DraPlacement:
    return DraPlacement("gpu.nvidia.com", "n1", device, numa)


def _cpus(numa: int) -> DraPlacement:
    return DraPlacement("dra.cpu", "n1", f"cpudevnuma{numa:03d}", numa)


@pytest.mark.parametrize(
    ("pinned", "devices", "misaligned_devices", "anchors"),
    [
        pytest.param({0}, [_gpu(1)], ["gpu-0"], (0,), id="gpu-off-the-cpus-node"),
        pytest.param({0}, [_gpu(0)], [], None, id="aligned"),
        pytest.param({0, 1}, [_gpu(1)], [], None, id="cpus-span-the-gpus-node"),
        pytest.param({0}, [_gpu(0), _gpu(1, "gpu-3")], ["gpu-3"], (0,), id="one-of-two"),
        pytest.param(set(), [_gpu(1)], [], None, id="nothing-pinned"),
        pytest.param({0}, [_gpu(None)], [], None, id="numa-unknown"),
        pytest.param(set(), [_cpus(0), _gpu(1)], ["gpu-0"], (0,), id="dra-cpus-elsewhere"),
        pytest.param(set(), [_cpus(1), _gpu(1)], [], None, id="dra-cpus-aligned"),
        pytest.param({0}, [_cpus(1), _gpu(1)], [], None, id="either-anchor-counts"),
        pytest.param(set(), [_cpus(0)], [], None, id="only-dra-cpus"),
    ],
)
def test_misalignment(
    pinned: set[int],
    devices: list[DraPlacement],
    misaligned_devices: list[str],
    anchors: tuple[int, ...] | None,
) -> None:
    found = misalignment("main", pinned, devices)
    if not misaligned_devices:
        assert found is None
        return
    assert found is not None
    assert [d.device for d in found.devices] == misaligned_devices
    assert found.pinned == anchors
    assert found.describe().startswith("container main: DRA device gpu.nvidia.com/n1/")
