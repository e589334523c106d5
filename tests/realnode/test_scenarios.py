"""The oracle's scenarios: every one renders for a real kubelet and is decided by the
simulator, and the fixed set covers every policy, scope and option."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from fakenrt.commands.podfiles import validated_claim, validated_pod
from fakenrt.podschema import SchemaChecker
from fakenrt.realnode.kubeletconfig import kubelet_configuration
from fakenrt.realnode.machine import machine_files
from fakenrt.realnode.oracle import Verdict, simulated_verdicts
from fakenrt.realnode.scenarios import (
    Scenario,
    dra_scenarios,
    fixed_scenarios,
    random_scenario,
    random_scenarios,
    scenario_inputs,
)

FIXED = fixed_scenarios()
DRA = dra_scenarios()
RANDOM = random_scenarios(60, seed=1)


@pytest.mark.parametrize("scenario", [*FIXED, *DRA, *RANDOM], ids=lambda s: s.name)
def test_scenario_renders_and_is_decided(scenario: Scenario) -> None:
    profile, pods = scenario_inputs(scenario)
    assert profile.name == scenario.node_name
    machine_files(profile)
    kubelet_configuration(profile)
    verdicts = simulated_verdicts(profile, pods)
    assert [v.pod for v in verdicts] == [f"default/{m['metadata']['name']}" for m in scenario.pods]


def test_names_are_unique() -> None:
    names = [s.name for s in (*FIXED, *DRA, *RANDOM)]
    assert len(names) == len(set(names))
    nodes = [s.node_name for s in (*FIXED, *DRA)]
    assert len(nodes) == len(set(nodes))


@pytest.mark.parametrize("scenario", DRA, ids=lambda s: s.name)
def test_dra_scenarios_are_what_the_api_server_accepts(scenario: Scenario) -> None:
    profile, _ = scenario_inputs(scenario)
    assert profile.dra
    for manifest in scenario.pods:
        validated_pod(manifest, source=scenario.name)
    names = set()
    for manifest in scenario.claims:
        names.add(manifest["metadata"]["name"])
        if manifest["kind"] == "ResourceClaim":
            validated_claim(manifest, source=scenario.name)
        else:
            checker = SchemaChecker()
            checker.check(manifest, "V1ResourceClaimTemplate", "")
            assert not checker.problems
    used = {
        c.get("resourceClaimName") or c.get("resourceClaimTemplateName")
        for m in scenario.pods
        for c in m["spec"].get("resourceClaims", [])
    }
    assert used == names
    assert scenario.scheduled <= {m["metadata"]["name"] for m in scenario.pods}


def test_the_dra_scenarios_cover_templates_capacity_constraints_and_pending() -> None:
    claims = [c for s in DRA for c in s.claims]
    assert {c["kind"] for c in claims} == {"ResourceClaim", "ResourceClaimTemplate"}
    specs = [c["spec"].get("spec", c["spec"])["devices"] for c in claims]
    assert any("constraints" in d for d in specs)
    requests = [r["exactly"] for d in specs for r in d["requests"]]
    assert any("capacity" in r for r in requests)
    assert any(r.get("count") == 2 for r in requests)
    assert any("selectors" in r for r in requests)
    drivers = {d.name for s in DRA for d in scenario_inputs(s)[0].dra}
    assert drivers == {"gpu.nvidia.com", "gpu.amd.com", "dra.cpu"}
    bypassing = [m for s in DRA for m in s.pods if m["metadata"]["name"] not in s.scheduled]
    assert bypassing  # claims never allocated: pods left Pending


def test_the_fixed_set_covers_every_policy_scope_and_option() -> None:
    profiles = [scenario_inputs(s)[0] for s in FIXED]
    cfgs = [p.kubelet for p in profiles]
    assert {c.topology_manager_policy for c in cfgs} == {
        "none",
        "best-effort",
        "restricted",
        "single-numa-node",
    }
    assert {c.topology_manager_scope for c in cfgs} == {"container", "pod"}
    assert set().union(*(c.cpu_policy_options for c in cfgs)) == {
        "full-pcpus-only",
        "distribute-cpus-across-numa",
        "align-by-socket",
        "distribute-cpus-across-cores",
        "strict-cpu-reservation",
        "prefer-align-cpus-by-uncorecache",
    }
    assert any(c.prefer_closest_numa_nodes for c in cfgs)
    assert {c.memory_manager_policy for c in cfgs} == {"None", "Static"}
    assert any(
        len({i.core for i in p.cpu_topology.values()}) < len(p.cpu_topology) for p in profiles
    )
    assert any(z.hugepages for p in profiles for z in p.zones)
    assert any(z.devices for p in profiles for z in p.zones)
    inits = [c for s in FIXED for m in s.pods for c in m["spec"].get("initContainers", [])]
    assert any(c.get("restartPolicy") == "Always" for c in inits)
    assert any("restartPolicy" not in c for c in inits)


def test_the_fixed_set_meets_every_verdict() -> None:
    reasons: Counter[str] = Counter()
    for scenario in FIXED:
        profile, pods = scenario_inputs(scenario)
        reasons.update(v.reason or "admitted" for v in simulated_verdicts(profile, pods))
    assert set(reasons) == {
        "admitted",
        "TopologyAffinityError",
        "SMTAlignmentError",
        "UnexpectedAdmissionError",
        "OutOfcpu",
    }


def test_random_scenarios_are_reproducible_from_the_seed() -> None:
    assert random_scenario(7, 3) == random_scenario(7, 3)
    assert random_scenarios(5, seed=7) != random_scenarios(5, seed=8)
    assert random_scenarios(5, seed=7)[4] == random_scenario(7, 4)


@pytest.mark.parametrize("scenario", [*FIXED[:3], *DRA], ids=lambda s: s.name)
def test_a_scenario_moved_to_another_namespace_decides_the_same(scenario: Scenario) -> None:
    moved = scenario.in_namespace("oracle-2")
    assert {m["metadata"]["namespace"] for m in (*moved.pods, *moved.claims)} == {"oracle-2"}
    assert scenario.pods[0]["metadata"]["namespace"] == "default"  # the original untouched
    profile, pods = scenario_inputs(scenario)
    moved_profile, moved_pods = scenario_inputs(moved)
    assert moved_profile == profile
    before = simulated_verdicts(profile, pods)
    after = simulated_verdicts(moved_profile, moved_pods)
    assert [v.pod for v in after] == [f"oracle-2/{m['metadata']['name']}" for m in moved.pods]

    def decided(verdicts: Sequence[Verdict]) -> list[tuple[object, ...]]:
        return [(v.admitted, v.reason, v.message, v.containers) for v in verdicts]

    assert decided(after) == decided(before)
