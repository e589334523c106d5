"""The Memory Manager checkpoint (``fakenrt.kubelet.memory_checkpoint``): the encoding
round-trips, a bad string is refused naming the field, and the restarting kubelet's check
(``validateState``, ``pkg/kubelet/cm/memorymanager/policy_static.go``) on a decoded
checkpoint decides as on the live node."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakenrt.kubelet.memory_checkpoint import (
    MemoryCheckpointError,
    decode_memory_checkpoint,
    encode_memory_checkpoint,
)
from fakenrt.kubelet.node import NodeState
from fakenrt.profiles.model import NodeProfile
from tests.kubelet.builders import GI, container, node, pod
from tests.kubelet.test_properties import pods, profiles
from tests.kubelet.test_restore import BEST_EFFORT_3, P0, P1, P5


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profiles(), st.data())
def test_a_decoded_checkpoint_is_the_live_one_and_is_judged_alike(
    profile: NodeProfile, data: st.DataObject
) -> None:
    hugepages = any(z.hugepages for z in profile.zones)
    state = NodeState.from_profile(profile)
    for step in range(data.draw(st.integers(1, 8), label="steps")):
        admitted = list(state.allocations())
        if admitted and data.draw(st.integers(0, 2)) == 0:
            state.release(data.draw(st.sampled_from(admitted)))
        else:
            state.admit(data.draw(pods(step, hugepages)))
    checkpoint = state.memory_checkpoint()
    if checkpoint is None:
        assert profile.kubelet.memory_manager_policy != "Static"
        return
    decoded = decode_memory_checkpoint(encode_memory_checkpoint(checkpoint))
    assert decoded == checkpoint
    assert state.checkpoint_problem(decoded) == state.restart_problem()


def _refused_node() -> NodeState:
    state = NodeState.from_profile(BEST_EFFORT_3)
    for spec in (P0, P1):
        assert state.admit(spec).admit
    state.release(P1.key)
    assert state.admit(P5).admit
    return state


def test_the_refused_node_is_refused_from_its_decoded_checkpoint() -> None:
    state = _refused_node()
    checkpoint = state.memory_checkpoint()
    assert checkpoint is not None
    problem = state.checkpoint_problem(
        decode_memory_checkpoint(encode_memory_checkpoint(checkpoint))
    )
    assert problem == state.restart_problem()
    assert problem is not None and "checkpointed blocks leave" in problem


def _live() -> dict[str, Any]:
    state = NodeState.from_profile(node(zones=2, cpus_per_zone=2, memory=4 * GI))
    assert state.admit(pod("p", container("c", cpu=1, memory="1Gi"))).admit
    checkpoint = state.memory_checkpoint()
    assert checkpoint is not None
    value: dict[str, Any] = json.loads(encode_memory_checkpoint(checkpoint))
    return value


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        pytest.param(
            lambda c: c["blocks"].append({"type": "memory", "size": 1, "numa": "5"}),
            "block 1 (memory) uses NUMA node 5, which the node does not have",
            id="block-on-a-missing-numa-node",
        ),
        pytest.param(
            lambda c: c["blocks"].append({"type": "hugepages-1Gi", "size": 1, "numa": "0"}),
            "block 1 uses hugepages-1Gi, which NUMA node 0 does not have",
            id="block-of-a-missing-type",
        ),
        pytest.param(
            lambda c: c["numa"].pop("1"),
            "the checkpoint has NUMA nodes [0], the node [0, 1]",
            id="numa-node-missing",
        ),
        pytest.param(
            lambda c: c["numa"]["1"]["tables"].update({"hugepages-2Mi": [0, 0, 0]}),
            "NUMA node 1 has memory types ['hugepages-2Mi', 'memory'] in the checkpoint, "
            "['memory'] on the node",
            id="memory-type-added",
        ),
        pytest.param(
            lambda c: c["numa"]["0"]["tables"]["memory"].__setitem__(2, 0),
            "NUMA nodes [0] have 0 bytes of memory reserved, their checkpointed blocks "
            "reserve 1073741824",
            id="reserved-differs",
        ),
        pytest.param(
            lambda c: c["numa"]["0"].update({"assignments": 2}),
            "NUMA node 0 holds 2 memory blocks, its checkpointed blocks make 1",
            id="assignments-differ",
        ),
    ],
)
def test_the_kubelet_refuses_a_checkpoint_that_is_not_its_machine(
    edit: Callable[[dict[str, Any]], object], problem: str
) -> None:
    profile = node(zones=2, cpus_per_zone=2, memory=4 * GI)
    state = NodeState.from_profile(profile)
    raw = _live()
    assert state.checkpoint_problem(decode_memory_checkpoint(json.dumps(raw))) is None
    edit(raw)
    got = state.checkpoint_problem(decode_memory_checkpoint(json.dumps(raw)))
    assert got == f"node n1: memory manager: {problem}"


def test_a_node_without_the_static_memory_manager_judges_nothing() -> None:
    state = NodeState.from_profile(node(memory_policy="None"))
    assert state.memory_checkpoint() is None
    checkpoint = _refused_node().memory_checkpoint()
    assert checkpoint is not None
    assert state.checkpoint_problem(checkpoint) is None


@pytest.mark.parametrize(
    ("text", "field"),
    [
        pytest.param("{not json", "not JSON", id="not-json"),
        pytest.param("[" * 100_000, "not JSON", id="deeply-nested"),
        pytest.param('{"v":2,"numa":{},"blocks":[]}', "v: unsupported version 2", id="version"),
        pytest.param('{"v":1,"numa":{"0":{}}}', "missing field 'blocks'", id="missing"),
        pytest.param('{"v":1,"v":1}', "field 'v' appears twice", id="duplicate"),
        pytest.param('{"v":1,"numa":{},"blocks":[]}', "numa: expected a non-empty", id="no-numa"),
        pytest.param(
            '{"v":1,"numa":{"01":{}},"blocks":[]}', "numa['01']: expected a NUMA", id="numa-id"
        ),
        pytest.param(
            '{"v":1,"numa":{"0":{"assignments":-1,"cells":"0","tables":{}}},"blocks":[]}',
            "numa['0'].assignments: expected a whole number",
            id="negative",
        ),
        pytest.param(
            '{"v":1,"numa":{"0":{"assignments":0,"cells":"0-999999999","tables":{}}},"blocks":[]}',
            "numa['0'].cells: expected a list of NUMA ids",
            id="hostile-cells",
        ),
        pytest.param(
            '{"v":1,"numa":{"0":{"assignments":0,"cells":"0","tables":{"memory":[1,1]}}},'
            '"blocks":[]}',
            "numa['0'].tables['memory']: expected [allocatable, free, reserved]",
            id="table-row",
        ),
        pytest.param(
            '{"v":1,"numa":{"0":{"assignments":0,"cells":"0","tables":{"cpu":[1,1,0]}}},'
            '"blocks":[]}',
            "numa['0'].tables['cpu']: not memory",
            id="table-type",
        ),
        pytest.param(
            '{"v":1,"numa":{"0":{"assignments":0,"cells":"0","tables":{}}},'
            '"blocks":[{"type":"memory","size":1.5,"numa":"0"}]}',
            "blocks[0].size: expected a whole number",
            id="block-size",
        ),
        pytest.param(
            '{"v":1,"numa":{"0":{"assignments":0,"cells":"0","tables":{}}},'
            '"blocks":[{"type":"memory","size":1,"numa":"0","x":1}]}',
            "blocks[0]: unknown field 'x'",
            id="block-unknown-field",
        ),
    ],
)
def test_a_malformed_checkpoint_is_refused_naming_the_field(text: str, field: str) -> None:
    with pytest.raises(MemoryCheckpointError) as caught:
        decode_memory_checkpoint(text)
    assert field in str(caught.value)
