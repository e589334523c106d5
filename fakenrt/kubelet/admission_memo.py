"""Admission decisions kept by node state and pod shape. Pure.

The simulated kubelet's admission (:meth:`fakenrt.kubelet.node.NodeState.admit`) is a
pure function of what never changes for a node (its profile but for its name: policies,
topology, devices, allocatable, the foreign pods), of the node's admission state (the
CPU Manager's shared pool, the devices in use, the Memory Manager's machine state, the
requests the whole-node fit check sums and the number of pods) and of the pod's
resources (its containers and init containers, and whether it names another node). No
part of it reads the pod's name, its annotations or the node's name, and no part of it
is random (the kubelet's Go-map orders are modelled as fixed orders).

Nodes of one shape go through the same states again and again in a simulation - a node
emptied and filled again, nodes filled by the same stream of pods - so the decision and
the state it leaves are kept per state and shape: measured at 248 nodes x 12,555 pods,
92% of the admissions find their decision kept. The nodes of one profile without its
name share one :class:`AdmissionMemo` (:func:`shared_memo`); every memo keeps its
decisions in one store bounded in entries for the whole process, however many profiles
and nodes there are (a controller serves thousands of nodes for weeks). What it keeps is
never modified (the node replaces its state on every change).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, replace

from fakenrt.hashed import Hashed
from fakenrt.kubelet.allocation import ContainerAllocation, HintReport
from fakenrt.kubelet.provider_memory import Block, MachineState
from fakenrt.podspec import PodSpec
from fakenrt.profiles.model import NodeProfile

#: Decisions kept in the process, all profiles together, before they are started afresh
#: (a bound on memory: a few KiB a decision on the bundled shapes).
MAX_KEPT = 8192
#: Profiles (without their names) whose memos are handed out again (:func:`shared_memo`).
MAX_PROFILES = 64

#: The node's admission state and the pod's resources (see the module docstring).
StateKey = tuple[object, ...]
#: Containers' texts kept by the identity of the tuples (see :func:`_containers_text`).
MAX_TEXTS = 4096


@dataclass(frozen=True)
class Admitted:
    """What an admission that admitted the pod leaves on the node."""

    containers: tuple[ContainerAllocation, ...]
    cpu_default: frozenset[int]
    #: resource -> device ids in use after the admission (copied into the node: the node
    #: updates its own dict in place on release).
    devices: Mapping[str, frozenset[str]]
    #: The machine state after the admission (never modified: the node clones it first).
    memory: MachineState
    blocks: tuple[Block, ...]
    request: Mapping[str, int]


@dataclass(frozen=True)
class Decided:
    """One admission decision: the kubelet's verdict, the hints behind it and, when
    admitted, what it leaves on the node."""

    admit: bool
    reason: str | None
    message: str | None
    hints: tuple[HintReport, ...]
    admitted: Admitted | None = None


class AdmissionMemo:
    """Decisions by :func:`state_key`, for the nodes of one profile (kept in the
    process-wide store, under the memo's own identity)."""

    def __init__(self) -> None:
        self._id = next(_IDS)

    def get(self, key: StateKey) -> Decided | None:
        return _KEPT.get((self._id, key))

    def put(self, key: StateKey, decided: Decided) -> None:
        if len(_KEPT) >= MAX_KEPT:
            _KEPT.clear()
        _KEPT[(self._id, key)] = decided

    def __len__(self) -> int:
        return sum(1 for memo, _ in _KEPT if memo == self._id)


_IDS = itertools.count()
#: (memo, state key) -> the decision, for every memo.
_KEPT: dict[tuple[int, StateKey], Decided] = {}


def state_key(
    *,
    cpu_default: frozenset[int],
    devices: Mapping[str, frozenset[str]],
    memory: Hashed,
    used: Mapping[str, int],
    pods: int,
    pod: PodSpec,
    node_name: str,
) -> StateKey:
    """What one admission depends on beyond the node's profile. Resources with nothing
    in use are left out (the kubelet reads a missing entry as none in use)."""
    return (
        cpu_default,
        tuple(sorted((name, ids) for name, ids in devices.items() if ids)),
        memory,
        tuple(sorted((name, amount) for name, amount in used.items() if amount)),
        pods,
        _containers_text(pod),
        not pod.node_name or pod.node_name == node_name,
    )


#: (id of the init containers, id of the containers) -> the tuples and their text.
_TEXTS: dict[tuple[int, int], tuple[object, object, str]] = {}


def _containers_text(pod: PodSpec) -> str:
    """The pod's containers and init containers as text (a key of equal values). A pod
    and its copies share their container tuples, so the text is kept by the tuples'
    identity (held, so that an id is not reused while kept), bounded in entries."""
    init, containers = pod.init_containers, pod.containers
    ids = (id(init), id(containers))
    kept = _TEXTS.get(ids)
    if kept is not None and kept[0] is init and kept[1] is containers:
        return kept[2]
    text = repr((init, containers))
    if len(_TEXTS) >= MAX_TEXTS:
        _TEXTS.clear()
    _TEXTS[ids] = (init, containers, text)
    return text


def memory_key(memory: MachineState) -> Hashed:
    """The Memory Manager's machine state as :func:`state_key`'s ``memory`` (hashed once:
    the node keeps it while it holds the same state)."""
    return Hashed(
        tuple(
            (
                zone,
                numa.assignments,
                numa.cells,
                tuple((k, t.allocatable, t.free, t.reserved) for k, t in numa.tables.items()),
            )
            for zone, numa in memory.items()
        )
    )


_SHARED: dict[str, AdmissionMemo] = {}


def shared_memo(profile: NodeProfile) -> AdmissionMemo:
    """The memo of the nodes whose profile is ``profile`` but for its name."""
    key = repr(replace(profile, name=""))
    kept = _SHARED.get(key)
    if kept is None:
        if len(_SHARED) >= MAX_PROFILES:
            _SHARED.pop(next(iter(_SHARED)))
        kept = _SHARED[key] = AdmissionMemo()
    return kept
