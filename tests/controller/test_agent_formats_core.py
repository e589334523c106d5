"""The other agents' formats in the controller core, in simulated time: every format is
rendered from one snapshot and published at the same moment, through one lag; koordlet's
NRT replaces the v1alpha2 one and names pods by the uids seen on the API."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from exporter.cpulist import parse_cpulist
from fakenrt.controller.effects import CreatePod, Effect, PublishNrt, PublishNumatopology
from fakenrt.controller.fleet import Fleet
from fakenrt.controller.nodeobjects import NodeIdentity
from fakenrt.controller.settings import ControllerSettings
from fakenrt.nrt import koordlet
from tests.controller.conftest import ManualClock, make_profiles, two_numa_profile
from tests.controller.podmanifests import pod

NODE = "n1"


def _started(
    clock: ManualClock, nrt: dict[str, Any] | None = None, **settings: Any
) -> tuple[Fleet, list[Effect]]:
    """A fleet of one node, started; and what its start published."""
    raw = two_numa_profile(NODE)
    if nrt is not None:
        raw["nrt"] = nrt
    profiles = make_profiles(raw)
    nodes = [(p, NodeIdentity(p.name, i)) for i, p in enumerate(profiles)]
    fleet = Fleet(nodes, ControllerSettings(nrt_refresh=0, **settings), clock=clock)
    return fleet, fleet.start([])


def _of(effects: Sequence[Effect], kind: type) -> list[Any]:
    return [e for e in effects if isinstance(e, kind)]


def test_numatopology_and_nrt_become_visible_together_after_the_lag(clock: ManualClock) -> None:
    f, _ = _started(clock, {"volcano": True, "delay": "3s"})
    effects = f.pod_event("ADDED", pod("a", NODE, cpu="2"))
    assert not _of(effects, PublishNrt) and not _of(effects, PublishNumatopology)
    clock.advance(2.9)
    assert not _of(f.advance(), PublishNrt)
    clock.advance(0.2)
    due = f.advance()
    (nrt,) = _of(due, PublishNrt)
    (numa,) = _of(due, PublishNumatopology)
    assert nrt.body["apiVersion"].endswith("/v1alpha2")
    (listed,) = numa.body["spec"]["podAllocations"]
    assert (listed["namespace"], listed["name"]) == ("ns", "a")


def test_the_controller_setting_and_no_volcano_without_it(clock: ManualClock) -> None:
    assert _of(_started(clock, nrt_volcano=True)[1], PublishNumatopology)
    assert _of(_started(clock, nrt_volcano=False)[1], PublishNrt)
    assert not _of(_started(clock, nrt_volcano=False)[1], PublishNumatopology)


def test_koordlets_nrt_instead_of_v1alpha2_with_the_pods_uid(clock: ManualClock) -> None:
    f, started = _started(clock, {"koordlet": True})
    (first,) = _of(started, PublishNrt)
    assert first.body["metadata"]["annotations"][koordlet.POD_CPU_ALLOCS] == "null"
    effects = f.pod_event("ADDED", pod("a", NODE, cpu="2", uid="uid-of-a"))
    (nrt,) = _of(effects, PublishNrt)
    assert nrt.body["apiVersion"] == koordlet.API_VERSION
    assert "attributes" not in nrt.body
    (alloc,) = json.loads(nrt.body["metadata"]["annotations"][koordlet.POD_CPU_ALLOCS])
    assert (alloc["uid"], alloc["managedByKubelet"]) == ("uid-of-a", True)
    assert not _of(effects, PublishNumatopology)


def test_a_foreign_pods_cpus_are_koordlets_once_its_uid_is_seen(clock: ManualClock) -> None:
    raw = two_numa_profile(NODE)
    raw["nrt"] = {"koordlet": True}
    raw["shape"] = None
    raw["zones"] = [
        {"id": 0, "cpus": "0-3", "memory": "8Gi", "allocated": {"cpu": 2}},
        {"id": 1, "cpus": "4-7", "memory": "8Gi"},
    ]
    profiles = make_profiles({k: v for k, v in raw.items() if v is not None})
    f = Fleet(
        [(profiles[0], NodeIdentity(NODE, 0))],
        ControllerSettings(nrt_refresh=0),
        clock=clock,
    )
    started = f.start([])
    (create,) = _of(started, CreatePod)
    (before,) = _of(started, PublishNrt)
    assert before.body["metadata"]["annotations"][koordlet.POD_CPU_ALLOCS] == "null"
    seen = {**create.manifest, "metadata": {**create.manifest["metadata"], "uid": "foreign-uid"}}
    (after,) = _of(f.pod_event("ADDED", seen), PublishNrt)
    (alloc,) = json.loads(after.body["metadata"]["annotations"][koordlet.POD_CPU_ALLOCS])
    assert alloc["uid"] == "foreign-uid" and len(parse_cpulist(alloc["cpuset"])) == 2
