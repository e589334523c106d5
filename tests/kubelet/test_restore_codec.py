"""The allocation codec: a round trip for any allocation, and a strict parser whose
errors name the field."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakenrt.kubelet.allocation import (
    INIT,
    REGULAR,
    SIDECAR,
    ContainerAllocation,
    MemoryBlock,
    PodAllocation,
)
from fakenrt.kubelet.allocation_codec import (
    AllocationCodecError,
    decode_allocation,
    encode_allocation,
)
from fakenrt.kubelet.node import NodeState
from tests.kubelet.builders import GI, container, node, pod

ids = st.text(st.characters(codec="utf-8"), min_size=1, max_size=8)
blocks = st.builds(
    MemoryBlock,
    type=st.sampled_from(["memory", "hugepages-1Gi", "hugepages-2Mi"]),
    size=st.integers(0, 2**63 - 1),
    numa=st.frozensets(st.integers(0, 63), min_size=1, max_size=4),
)
containers = st.builds(
    ContainerAllocation,
    name=ids,
    cpus=st.frozensets(st.integers(0, 4095), max_size=40),
    devices=st.dictionaries(
        ids, st.lists(ids, min_size=1, max_size=4, unique=True).map(tuple), max_size=3
    ),
    memory=st.lists(blocks, max_size=3).map(tuple),
    kind=st.sampled_from([REGULAR, INIT, SIDECAR]),
)
allocations = st.builds(
    PodAllocation,
    namespace=ids,
    name=ids,
    uid=st.one_of(st.just(""), st.uuids().map(str)),
    containers=st.lists(containers, max_size=4, unique_by=lambda c: c.name).map(tuple),
)


@given(allocations)
def test_round_trip(allocation: PodAllocation) -> None:
    text = encode_allocation(allocation)
    # compact, one line (ids may hold ": " themselves: compare with a compact re-encoding)
    assert "\n" not in text
    assert text == json.dumps(json.loads(text), separators=(",", ":"))
    back = decode_allocation(text, namespace=allocation.namespace, name=allocation.name)
    assert back == allocation
    for got, want in zip(back.containers, allocation.containers, strict=True):
        assert {k: list(v) for k, v in got.devices.items()} == {
            k: list(v) for k, v in want.devices.items()
        }  # device order kept


def test_a_simulated_allocation_survives_the_trip_and_restores() -> None:
    profile = node(devices={"nvidia.com/gpu": 2}, hugepages={"hugepages-1Gi": 2 * GI})
    spec = pod(
        "p",
        container("app", cpu=2, gpu=1, hugepages_1Gi="1Gi"),
        init=[container("setup", cpu=1), {**container("proxy", cpu=1), "restartPolicy": "Always"}],
    )
    first = NodeState.from_profile(profile)
    result = first.admit(spec)
    assert result.allocation is not None
    text = encode_allocation(result.allocation)
    back = decode_allocation(text, namespace="default", name="p")
    assert back == result.allocation
    state = NodeState.from_profile(profile)
    state.restore(spec, back)
    assert state.zone_usage() == first.zone_usage()


def test_the_format() -> None:
    allocation = PodAllocation(
        "ns",
        "p",
        "u1",
        (
            ContainerAllocation("i", frozenset({4}), kind=INIT),
            ContainerAllocation(
                "c",
                frozenset({2, 3, 4, 5}),
                {"nvidia.com/gpu": ("GPU-1", "GPU-0")},
                (MemoryBlock("memory", GI, frozenset({0, 1})),),
            ),
        ),
    )
    assert json.loads(encode_allocation(allocation)) == {
        "v": 1,
        "uid": "u1",
        "containers": [
            {"name": "i", "kind": "init", "cpus": "4"},
            {
                "name": "c",
                "cpus": "2-5",
                "devices": {"nvidia.com/gpu": ["GPU-1", "GPU-0"]},
                "memory": [{"type": "memory", "size": GI, "numa": "0-1"}],
            },
        ],
    }


def _doc(**container: object) -> str:
    return json.dumps({"v": 1, "uid": "u", "containers": [{"name": "c", **container}]})


BAD = [
    pytest.param("{", "not JSON", id="not-json"),
    pytest.param("[" * 100_000, "not JSON", id="deeply-nested"),
    pytest.param("[]", "the allocation: expected an object", id="not-an-object"),
    pytest.param('{"v":1,"uid":"u"}', "the allocation: missing field 'containers'", id="missing"),
    pytest.param(
        '{"v":1,"uid":"u","containers":[],"extra":1}',
        "the allocation: unknown field 'extra'",
        id="unknown-field",
    ),
    pytest.param('{"v":2,"uid":"u","containers":[]}', "v: unsupported version 2", id="version"),
    pytest.param('{"v":true,"uid":"u","containers":[]}', "v: unsupported version", id="v-bool"),
    pytest.param('{"v":1,"uid":1,"containers":[]}', "uid: expected a", id="uid-type"),
    pytest.param('{"v":1,"v":1,"uid":"u","containers":[]}', "field 'v' appears twice", id="dup"),
    pytest.param('{"v":1,"uid":"u","containers":{}}', "containers: expected a list", id="list"),
    pytest.param(_doc(name=""), "containers[0].name: expected a non-empty string", id="name"),
    pytest.param(
        json.dumps({"v": 1, "uid": "u", "containers": [{"name": "c"}, {"name": "c"}]}),
        "containers[1].name: duplicate container 'c'",
        id="duplicate-container",
    ),
    pytest.param(_doc(kind="app"), "containers[0].kind: 'app' is not one of", id="kind"),
    pytest.param(_doc(kind="regular"), "containers[0].kind: 'regular' is not", id="kind-default"),
    pytest.param(_doc(cpus="3-1"), "containers[0].cpus: range '3-1'", id="cpus-descending"),
    pytest.param(_doc(cpus=""), "containers[0].cpus: expected a non-empty string", id="cpus-empty"),
    pytest.param(_doc(cpus=[1]), "containers[0].cpus: expected a", id="cpus-type"),
    pytest.param(_doc(devices=[]), "containers[0].devices: expected a non-empty obj", id="devs"),
    pytest.param(
        _doc(devices={"nvidia.com/gpu": "GPU-0"}),
        "containers[0].devices['nvidia.com/gpu']: expected a list",
        id="device-ids-type",
    ),
    pytest.param(
        _doc(devices={"nvidia.com/gpu": []}),
        "containers[0].devices['nvidia.com/gpu']: expected at least one device id",
        id="device-ids-empty",
    ),
    pytest.param(
        _doc(devices={"nvidia.com/gpu": ["a", "a"]}),
        "containers[0].devices['nvidia.com/gpu']: a device id is listed twice",
        id="device-ids-duplicate",
    ),
    pytest.param(
        _doc(devices={"nvidia.com/gpu": ["a", 3]}),
        "containers[0].devices['nvidia.com/gpu'][1]: expected a non-empty string",
        id="device-id-type",
    ),
    pytest.param(_doc(memory=[]), "containers[0].memory: expected a non-empty list", id="mem"),
    pytest.param(
        _doc(memory=[{"type": "memory", "size": 1}]),
        "containers[0].memory[0]: missing field 'numa'",
        id="block-missing",
    ),
    pytest.param(
        _doc(memory=[{"type": "cpu", "size": 1, "numa": "0"}]),
        "containers[0].memory[0].type: 'cpu' is not memory or hugepages-<size>",
        id="block-type",
    ),
    pytest.param(
        _doc(memory=[{"type": "memory", "size": -1, "numa": "0"}]),
        "containers[0].memory[0].size: expected a whole number of bytes",
        id="block-negative",
    ),
    pytest.param(
        _doc(memory=[{"type": "memory", "size": 1.5, "numa": "0"}]),
        "containers[0].memory[0].size: expected a whole number of bytes",
        id="block-fraction",
    ),
    pytest.param(
        _doc(memory=[{"type": "memory", "size": 1, "numa": ""}]),
        "containers[0].memory[0].numa: expected a non-empty string",
        id="block-numa-empty",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_the_parser_is_strict(text: str, message: str) -> None:
    with pytest.raises(AllocationCodecError) as caught:
        decode_allocation(text, namespace="ns", name="p")
    assert message in str(caught.value)
