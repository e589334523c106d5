"""The typed podresources report (fakenrt.podresources_report) says exactly what the fake
server's protobuf messages say once the exporter decodes them: in-process users skip the
serialization, never the facts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.podresources_proto import decode_pod
from fakenrt.kubelet.allocation import (
    INIT,
    REGULAR,
    SIDECAR,
    ClaimResource,
    ContainerAllocation,
    DynamicResource,
    MemoryBlock,
    PodAllocation,
)
from fakenrt.podresources_messages import pod_message
from fakenrt.podresources_report import DeviceNuma, allocation_zones, pod_report

NUMA: DeviceNuma = {
    **{("nvidia.com/gpu", f"GPU-{i}"): i // 2 for i in range(8)},
    ("rdma/hca", "mlx5_0"): 0,
    ("example.com/nic", "nic-0"): None,  # no NUMA affinity
}
CPU_NUMA = {cpu: cpu // 8 for cpu in range(32)}

devices = st.dictionaries(
    st.sampled_from(sorted({r for r, _ in NUMA})),
    st.lists(st.sampled_from(sorted(d for _, d in NUMA)), min_size=1, max_size=3, unique=True),
    max_size=2,
).map(lambda d: {r: tuple(ids) for r, ids in d.items()})
blocks = st.lists(
    st.builds(
        MemoryBlock,
        type=st.sampled_from(["memory", "hugepages-2Mi"]),
        size=st.integers(1, 2**40),
        numa=st.frozensets(st.integers(0, 3), min_size=1, max_size=3),
    ),
    max_size=3,
).map(tuple)
names = st.sampled_from(["a", "gpu-0", "x.y"])
dynamic = st.lists(
    st.builds(
        DynamicResource,
        claim_name=names,
        claim_namespace=st.sampled_from(["ns", "other"]),
        resources=st.lists(
            st.builds(
                ClaimResource,
                driver=st.sampled_from(["gpu.example.com", "nic.example.com"]),
                pool=names,
                device=names,
                cdi_ids=st.lists(names, max_size=2).map(tuple),
                share_id=st.none() | st.sampled_from(["s-1", ""]),
            ),
            max_size=2,
        ).map(tuple),
    ),
    max_size=2,
).map(tuple)
containers = st.lists(
    st.builds(
        ContainerAllocation,
        name=st.sampled_from(["a", "b", "init", "side"]),
        cpus=st.frozensets(st.integers(0, 31), max_size=6),
        devices=devices,
        memory=blocks,
        kind=st.sampled_from([REGULAR, SIDECAR, INIT]),
        dynamic=dynamic,
    ),
    max_size=4,
).map(tuple)


@settings(max_examples=300, deadline=None)
@given(containers=containers)
def test_the_report_is_what_the_exporter_decodes_from_the_servers_message(
    containers: tuple[ContainerAllocation, ...],
) -> None:
    allocation = PodAllocation("ns", "p", "uid", containers)
    wire = decode_pod(pod_message(allocation, NUMA).SerializeToString())
    assert pod_report(allocation, NUMA) == wire


def test_the_zones_of_an_allocation() -> None:
    allocation = PodAllocation(
        "ns",
        "p",
        "",
        (
            ContainerAllocation("init", cpus=frozenset({30}), kind=INIT),
            ContainerAllocation(
                "main",
                cpus=frozenset({1, 2}),
                devices={"nvidia.com/gpu": ("GPU-2",), "example.com/nic": ("nic-0",)},
                memory=(MemoryBlock("memory", 1 << 30, frozenset({0, 1})),),
            ),
        ),
    )
    # CPUs 1-2 on zone 0, GPU-2 on zone 1, memory over 0 and 1, the init container's CPU
    # 30 on zone 3; the NIC has no NUMA affinity.
    assert allocation_zones(allocation, CPU_NUMA, NUMA) == (0, 1, 3)
