"""The readable explanation and the pod checks behind ``fakenrt kubelet explain``."""

from __future__ import annotations

from fakenrt.kubelet.explain import render_text, result_json
from fakenrt.kubelet.node import NodeState
from tests.kubelet.builders import container, node, pod


def test_pod_scope_is_explained_for_the_pod() -> None:
    profile = node(devices={"nvidia.com/gpu": 1}, policy="single-numa-node", scope="pod")
    result = NodeState.from_profile(profile).admit(
        pod("p", container("a", cpu=1, gpu=1), container("b", cpu=1, gpu=1))
    )
    text = render_text(result, profile)
    assert "(single-numa-node, pod scope): REJECTED TopologyAffinityError" in text
    assert "  pod: best hint any NUMA node (not preferred) - single-numa-node keeps only" in text
    assert "    nvidia.com/gpu: prefers {0,1}" in text
    assert result_json(result, profile)["hints"][0]["container"] is None


def test_policy_none_and_fit_rejections_are_explained() -> None:
    profile = node(policy="none")
    state = NodeState.from_profile(profile)
    ok = state.admit(pod("p", container("c", cpu=2)))
    text = render_text(ok, profile)
    assert "policy none: no hints gathered" in text
    assert "c (regular): cpus 0-1; memory 1Gi on {0}" in text
    big = state.admit(pod("q", container("c", guaranteed=False, cpu="64")))
    assert "REJECTED OutOfcpu: Node didn't have enough resource: cpu, requested: 64000" in (
        render_text(big, profile)
    )
    assert result_json(big, profile)["allocation"] == []
