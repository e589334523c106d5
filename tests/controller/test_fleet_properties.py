"""Properties of the controller core under random pod churn (hypothesis): whatever the
sequence of binds, deletions, completions and clock moves,

* no CPU or device is ever held by two pods;
* the podresources view always equals the simulator's allocations;
* once every timer has fired, the last NRT published shows exactly the current usage;
* a pod is admitted at most once and every bound pod gets exactly one verdict;
* a pod being deleted holds nothing and its removal is asked for exactly once.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fakenrt.controller.effects import DeletePod, PatchPodStatus, PublishNrt, ServePodResources
from fakenrt.controller.fleet import Fleet
from fakenrt.controller.nodeobjects import NodeIdentity
from fakenrt.controller.pods import RUN_DURATION_ANNOTATION, SEQUENCE_ANNOTATION
from fakenrt.controller.settings import ControllerSettings
from fakenrt.nrt import render_nrt
from tests.controller.conftest import ManualClock, make_profiles, two_numa_profile
from tests.controller.podmanifests import pod

NODE = "prop"
PROFILES = make_profiles(two_numa_profile(NODE, policy="restricted", gpus=2))

bind = st.tuples(
    st.just("bind"),
    st.sampled_from(["500m", "1", "2", "3"]),
    st.integers(0, 2),
    st.booleans(),
    st.sampled_from([None, "5s", "30s"]),
)
delete = st.tuples(st.sampled_from(["delete", "terminate"]), st.integers(0, 50))
wait = st.tuples(st.just("wait"), st.floats(0, 20))
steps = st.lists(st.one_of(bind, delete, wait), max_size=40)


@settings(max_examples=200, deadline=None)
@given(steps, st.floats(0, 3), st.floats(0, 3), st.floats(0, 2))
def test_churn_keeps_the_books_straight(
    ops: list[tuple[Any, ...]], delay: float, jitter: float, start_delay: float
) -> None:
    clock = ManualClock()
    fleet = Fleet(
        [(PROFILES[0], NodeIdentity(NODE, 0))],
        ControllerSettings(
            nrt_delay=delay, nrt_jitter=jitter, start_delay=start_delay, nrt_refresh=0
        ),
        clock=clock,
    )
    effects = list(fleet.start([]))
    bound: list[dict[str, Any]] = []
    verdicts: dict[str, int] = {}
    gone: set[int] = set()
    for op in ops:
        if op[0] == "bind":
            _, cpu, gpus, guaranteed, run = op
            annotations = {RUN_DURATION_ANNOTATION: run} if run else {}
            manifest = pod(
                f"p{len(bound)}", NODE, cpu=cpu, gpus=gpus, guaranteed=guaranteed,
                annotations=annotations,
            )  # fmt: skip
            bound.append(manifest)
            effects += fleet.pod_event("ADDED", manifest)
        elif op[0] in ("delete", "terminate") and (
            alive := [m for m in bound if id(m) not in gone]
        ):
            target = alive[op[1] % len(alive)]
            if op[0] == "delete":  # the object is gone (nothing can happen to it afterwards)
                gone.add(id(target))
                effects += fleet.pod_event("DELETED", target)
            else:  # a graceful delete: deletionTimestamp set
                target = copy.deepcopy(target)
                target["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z"
                effects += fleet.pod_event("MODIFIED", target)
        elif op[0] == "wait":
            clock.advance(op[1])
        effects += fleet.advance()
        state = fleet.nodes[NODE].state
        cpus = [c for a in state.allocations().values() for x in a.containers for c in x.cpus]
        gpus_held = [
            d for a in state.allocations().values() for x in a.containers
            for d in x.devices.get("nvidia.com/gpu", ())
        ]  # fmt: skip
        assert len(cpus) == len(set(cpus))
        assert len(gpus_held) == len(set(gpus_held))
        served = [e for e in effects if isinstance(e, ServePodResources)]
        assert served[-1].allocations == tuple(state.allocations().values())
    for e in effects:  # the admission (sequence number) or the rejection of each pod
        if isinstance(e, PatchPodStatus) and (
            SEQUENCE_ANNOTATION in e.annotations or e.status.get("reason")
        ):
            verdicts[e.name] = verdicts.get(e.name, 0) + 1
    for _ in range(3):  # starts and completions fire, then their lagged publications
        clock.advance(10_000)
        effects += fleet.advance()
    last = [e for e in effects if isinstance(e, PublishNrt)][-1]
    model = fleet.nodes[NODE]
    current = model.snapshot()
    assert last.body == render_nrt(PROFILES[0], usage=current.usage, pods=current.pods)
    assert verdicts == {m["metadata"]["name"]: 1 for m in bound}
    removals = [e.name for e in effects if isinstance(e, DeletePod)]
    assert len(removals) == len(set(removals))
    held = fleet.nodes[NODE].state.allocations()
    assert not {f"ns/{name}" for name in removals} & set(held)
