"""What the scorecard asserts, as opposed to what it reports. Pure.

A scheduler's TopologyAffinityErrors are findings. What the harness must prove is
asserted, over the records (tests/scorecard/records.py):

1. ``harness``: in every cell, every TopologyAffinityError counted is one the kubelet
   made (its Warning event, from the node the pod is bound to, for the pod's uid) and
   every such event is counted; no CPU or device is held by two pods at any poll; the
   exporter's annotations and every NRT converge to what the kubelets hold; no cell
   failed to run.
2. ``claims``: in the default variant of every scenario, nothing contradicts the claims
   the adapter makes (the pytest suite's assertions: tests/e2e/claims.py).
3. ``numa-blind-caught``: the stock kube-scheduler (NUMA-blind) gets TopologyAffinityErrors
   in the default variant of every scenario whose arithmetic forces them (a, b, g): the
   harness catches a NUMA-blind scheduler.
4. ``stale-nrt-caught``: every mode known to trust a stale NRT gets TopologyAffinityErrors
   in scenario d under 5 s +- 3 s of lag.
5. ``seed-000-hole``: KAI's default mode gets TopologyAffinityErrors on scenario g without
   an exporter, and fewer with it (NRT lag 0): the hole of seed 000, reproduced, and the
   exporter closing it. Fewer, not none: with the exporter KAI mostly gets none, but
   occasionally one - a different mistake (three 2-GPU pods of one cycle sent to a node
   whose zones hold two), reported as a finding (docs/scorecard.md, docs/schedulers/kai.md).
6. ``dra-misaligned-caught``: the stock kube-scheduler, allocating DRA GPUs without knowing
   where the kubelet will pin the pod's CPUs, has pods the exporter reports misaligned in
   scenarios i and k; with the GPU and the CPUs under one ``matchAttribute`` on the NUMA
   node (j) none, and the pod no NUMA node can hold stays Pending: the silent failure made
   visible, and the constraint that avoids it.

An assertion whose scheduler is not registered is not applicable. One whose cells are
missing fails when a whole matrix was run (``make scorecard``, ``make scorecard-ci``) and is
not applicable in a partial run (cells, schedulers or scenarios picked).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from schedulers.adapter import Adapter
from tests.e2e.scenarios import SCENARIOS
from tests.e2e.variants import LAG_5S, LAG_NONE, Variant
from tests.scorecard.matrix import Cell
from tests.scorecard.records import broken_claims, harness_problems

Record = Mapping[str, Any]
#: The scheduler (adapter family) of the stock, NUMA-blind kube-scheduler.
NUMA_BLIND = "kube-scheduler"
#: The scheduler whose default mode rebuilds free zones from placement records (seed 000).
SEED_HOLE = "kai"
SEED_HOLE_SCENARIO = "g"
WITH_EXPORTER = Variant(exporter=True, lag=LAG_NONE)
WITHOUT_EXPORTER = Variant(exporter=False, lag=LAG_NONE)
STALE_SCENARIO = "d"
STALE_VARIANT = Variant(exporter=True, lag=LAG_5S)
#: The DRA scenarios where an allocator blind to the kubelet's CPUs misaligns a pod, and
#: the one where a matchAttribute constraint aligns every pod that runs.
DRA_MISALIGNED = ("i", "k")
DRA_ALIGNED = "j"


@dataclass(frozen=True)
class Verdict:
    """One assertion's result: passed, failed, or not applicable (``passed`` None)."""

    id: str
    statement: str
    passed: bool | None
    evidence: tuple[str, ...] = ()
    #: Some of the cells it needs were not run (it then holds only as far as it goes).
    incomplete: bool = False


def _verdict(
    id: str, statement: str, *, failed: bool, missing: list[str], evidence: list[str]
) -> Verdict:
    """Failed when a cell that ran contradicts it; otherwise holding, unless cells it
    needs were not run (:func:`judge` decides what that means)."""
    lines = (*evidence, *(f"{m}: not run" for m in missing))
    if failed:
        return Verdict(id, statement, False, lines, bool(missing))
    return Verdict(id, statement, None if missing else True, lines, bool(missing))


def _key(rec: Record) -> tuple[str, str, str]:
    return (str(rec.get("scheduler")), str(rec.get("scenario")), str(rec.get("variant")))


def _errors(rec: Record) -> int:
    return int(rec.get("topology_affinity_errors") or 0)


def _find(
    records: Sequence[Record], scheduler: str, scenario: str, variant: Variant
) -> Record | None:
    for rec in records:
        if _key(rec) == (scheduler, scenario, variant.id):
            return rec
    return None


def _default(adapters: Sequence[Adapter], family: str) -> Adapter | None:
    return next((a for a in adapters if a.scheduler == family and a.default), None)


def _harness(records: Sequence[Record], adapters: Sequence[Adapter]) -> Verdict:
    evidence = [f"{'/'.join(_key(r))}: {p}" for r in records for p in harness_problems(r)]
    return Verdict(
        "harness",
        "every rejection counted is the kubelet's, nothing is held twice, the exporter and "
        "NRT converge, every cell ran",
        not evidence,
        tuple(evidence),
    )


def _claims(records: Sequence[Record], adapters: Sequence[Adapter]) -> Verdict:
    evidence = [
        f"{'/'.join(_key(r))}: {p}"
        for r in records
        if r.get("default_variant")
        for p in broken_claims(r)
    ]
    return Verdict(
        "claims",
        "in each scenario's default variant, nothing contradicts the claims of the adapter",
        not evidence,
        tuple(evidence),
    )


def _blind(records: Sequence[Record], adapters: Sequence[Adapter]) -> Verdict:
    statement = (
        f"the NUMA-blind {NUMA_BLIND} gets TopologyAffinityErrors where the arithmetic forces "
        "them (default variant)"
    )
    adapter = _default(adapters, NUMA_BLIND)
    if adapter is None:
        return Verdict("numa-blind-caught", statement, None, (f"{NUMA_BLIND}: no adapter",))
    evidence, missing, failed = [], [], False
    for scenario in (s for s in SCENARIOS.values() if s.blind_scheduler_fails):
        rec = _find(records, adapter.id, scenario.id, scenario.default_variant)
        if rec is None:
            missing.append(f"{adapter.id}/{scenario.id}/{scenario.default_variant.id}")
            continue
        failed |= _errors(rec) == 0
        evidence.append(f"{'/'.join(_key(rec))}: {_errors(rec)} TopologyAffinityErrors")
    return _verdict(
        "numa-blind-caught", statement, failed=failed, missing=missing, evidence=evidence
    )


def _stale(records: Sequence[Record], adapters: Sequence[Adapter]) -> Verdict:
    statement = "every mode known to trust a stale NRT gets TopologyAffinityErrors in d under lag"
    stale = [a for a in adapters if a.trusts_stale_nrt]
    if not stale:
        return Verdict("stale-nrt-caught", statement, None, ("no adapter trusts a stale NRT",))
    evidence, missing, failed = [], [], False
    for adapter in stale:
        rec = _find(records, adapter.id, STALE_SCENARIO, STALE_VARIANT)
        if rec is None:
            missing.append(f"{adapter.id}/{STALE_SCENARIO}/{STALE_VARIANT.id}")
            continue
        failed |= _errors(rec) == 0
        evidence.append(f"{'/'.join(_key(rec))}: {_errors(rec)} TopologyAffinityErrors")
    return _verdict(
        "stale-nrt-caught", statement, failed=failed, missing=missing, evidence=evidence
    )


def _hole(records: Sequence[Record], adapters: Sequence[Adapter]) -> Verdict:
    statement = (
        f"{SEED_HOLE}'s default mode gets TopologyAffinityErrors on {SEED_HOLE_SCENARIO} "
        "without an exporter, and fewer with it (seed 000's hole, and the exporter closing it)"
    )
    adapter = _default(adapters, SEED_HOLE)
    if adapter is None:
        return Verdict("seed-000-hole", statement, None, (f"{SEED_HOLE}: no adapter",))
    found: dict[str, int] = {}
    evidence, missing = [], []
    for variant in (WITHOUT_EXPORTER, WITH_EXPORTER):
        rec = _find(records, adapter.id, SEED_HOLE_SCENARIO, variant)
        if rec is None:
            missing.append(f"{adapter.id}/{SEED_HOLE_SCENARIO}/{variant.id}")
            continue
        found[variant.id] = _errors(rec)
        evidence.append(f"{'/'.join(_key(rec))}: {_errors(rec)} TopologyAffinityErrors")
    without, with_ = found.get(WITHOUT_EXPORTER.id), found.get(WITH_EXPORTER.id)
    failed = (without is not None and without == 0) or (
        without is not None and with_ is not None and with_ >= without
    )
    return _verdict("seed-000-hole", statement, failed=failed, missing=missing, evidence=evidence)


def _dra(records: Sequence[Record], adapters: Sequence[Adapter]) -> Verdict:
    statement = (
        f"the {NUMA_BLIND} allocating DRA GPUs has pods the exporter reports misaligned in "
        f"{' and '.join(DRA_MISALIGNED)}; under matchAttribute numaNode ({DRA_ALIGNED}) none, "
        "and the pod no NUMA node holds stays Pending"
    )
    adapter = _default(adapters, NUMA_BLIND)
    if adapter is None or not adapter.allocates_claims:
        return Verdict("dra-misaligned-caught", statement, None, (f"{NUMA_BLIND}: no adapter",))
    evidence, missing, failed = [], [], False
    for scenario_id in (*DRA_MISALIGNED, DRA_ALIGNED):
        scenario = SCENARIOS[scenario_id]
        rec = _find(records, adapter.id, scenario_id, scenario.default_variant)
        if rec is None:
            missing.append(f"{adapter.id}/{scenario_id}/{scenario.default_variant.id}")
            continue
        misaligned, pending = rec.get("misaligned"), int(rec.get("pending") or 0)
        if scenario_id == DRA_ALIGNED:
            failed |= misaligned != 0 or pending == 0
        else:
            failed |= not misaligned
        evidence.append(f"{'/'.join(_key(rec))}: {misaligned} misaligned, {pending} pending")
    return _verdict(
        "dra-misaligned-caught", statement, failed=failed, missing=missing, evidence=evidence
    )


ASSERTIONS: tuple[Callable[[Sequence[Record], Sequence[Adapter]], Verdict], ...] = (
    _harness,
    _claims,
    _blind,
    _stale,
    _hole,
    _dra,
)


def judge(
    records: Iterable[Record], adapters: Sequence[Adapter], *, complete: bool = True
) -> list[Verdict]:
    """Every assertion over ``records``; ``adapters`` are the registered ones. With
    ``complete`` (a whole matrix was run) an assertion whose cells are missing fails; a
    partial run (some cells, schedulers or scenarios picked) leaves it not applicable."""
    listed = list(records)
    verdicts = [assertion(listed, adapters) for assertion in ASSERTIONS]
    if not complete:
        return verdicts
    return [replace(v, passed=False) if v.incomplete else v for v in verdicts]


def required_cells(adapters: Sequence[Adapter]) -> list[Cell]:
    """The cells the assertions need beyond every adapter's default variants."""
    cells: list[Cell] = []
    blind = _default(adapters, NUMA_BLIND)
    if blind is not None:
        cells += [
            Cell(blind, s, s.default_variant) for s in SCENARIOS.values() if s.blind_scheduler_fails
        ]
    cells += [
        Cell(a, SCENARIOS[STALE_SCENARIO], STALE_VARIANT) for a in adapters if a.trusts_stale_nrt
    ]
    if blind is not None and blind.allocates_claims:
        cells += [
            Cell(blind, SCENARIOS[s], SCENARIOS[s].default_variant)
            for s in (*DRA_MISALIGNED, DRA_ALIGNED)
        ]
    hole = _default(adapters, SEED_HOLE)
    if hole is not None:
        cells += [
            Cell(hole, SCENARIOS[SEED_HOLE_SCENARIO], v) for v in (WITHOUT_EXPORTER, WITH_EXPORTER)
        ]
    return cells
