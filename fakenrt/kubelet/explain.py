"""Readable and JSON explanations of admission results. Pure (returns strings / dicts).

The JSON form is what ``fakenrt kubelet explain --json`` prints, one object per pod; it
carries everything the text shows::

    {"pod": "default/p1", "node": "n1", "policy": "restricted", "scope": "container",
     "admit": false, "reason": "TopologyAffinityError", "message": "Resources cannot be ...",
     "hints": [{"container": "c1", "best": {"numa": [0], "preferred": true},
                "why": "nvidia.com/gpu, cpu all prefer {0}",
                "providers": {"cpu": [{"numa": [0], "preferred": true}, ...]},
                "omitted": {"cpu": 65519}, "notes": ["..."]}],
     "allocation": [{"container": "c1", "kind": "regular", "cpus": "2-5",
                     "devices": {"nvidia.com/gpu": ["GPU-0"]},
                     "memory": [{"type": "memory", "size": 1073741824, "numa": [0]}]}],
     "dra": null}

``dra`` is null for a pod without ResourceClaims, else what :mod:`fakenrt.kubelet.
explain_dra` says: whether the claims were prepared (else the kubelet's event), each
container's claims with their devices and NUMA nodes, and the misaligned containers.

A provider can return tens of thousands of hints on a node with many NUMA nodes (one per
subset of NUMA nodes: 65,535 at 16). Unless ``verbose``, each provider's list is cut to
its first :data:`SHOWN_HINTS` preferred and first :data:`SHOWN_HINTS` other hints (in the
provider's order, narrowest first), and ``omitted`` counts what was left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from exporter.cpulist import format_cpulist
from fakenrt.kubelet.allocation import AdmissionResult, HintReport, ProviderHint
from fakenrt.kubelet.explain_dra import DraOutcome, dra_json, dra_text
from fakenrt.kubelet.provider_cpu import SMT_ALIGNMENT_ERROR
from fakenrt.profiles.model import NodeProfile

#: Hints of each kind (preferred, not preferred) shown per provider without ``verbose``.
SHOWN_HINTS = 8


def _hint_json(h: ProviderHint) -> dict[str, Any]:
    return {"numa": None if h.numa is None else list(h.numa), "preferred": h.preferred}


def shown_hints(
    hints: Sequence[ProviderHint], *, verbose: bool
) -> tuple[tuple[ProviderHint, ...], int]:
    """The hints to show and how many are left out: all when ``verbose``, else the first
    :data:`SHOWN_HINTS` preferred and the first :data:`SHOWN_HINTS` others, in order."""
    if verbose:
        return tuple(hints), 0
    kept: list[ProviderHint] = []
    counts = {True: 0, False: 0}
    for h in hints:
        if counts[h.preferred] < SHOWN_HINTS:
            counts[h.preferred] += 1
            kept.append(h)
    return tuple(kept), len(hints) - len(kept)


def result_json(
    result: AdmissionResult,
    profile: NodeProfile,
    *,
    verbose: bool = False,
    dra: DraOutcome | None = None,
) -> dict[str, Any]:
    """The JSON object for one pod: the verdict and message, the hints of every provider
    (cut unless ``verbose``), the notes and why the best hint won, the allocation."""
    policy = profile.kubelet.topology_manager_policy
    allocation: list[dict[str, Any]] = []
    if result.allocation is not None:
        for c in result.allocation.containers:
            allocation.append(
                {
                    "container": c.name,
                    "kind": c.kind,
                    "cpus": format_cpulist(c.cpus),
                    "devices": {k: list(v) for k, v in sorted(c.devices.items())},
                    "memory": [
                        {"type": b.type, "size": b.size, "numa": sorted(b.numa)} for b in c.memory
                    ],
                }
            )
    hints: list[dict[str, Any]] = []
    for report in result.hints:
        providers: dict[str, list[dict[str, Any]]] = {}
        omitted: dict[str, int] = {}
        for resource, provider_hints in report.providers.items():
            kept, left_out = shown_hints(provider_hints, verbose=verbose)
            providers[resource] = [_hint_json(x) for x in kept]
            if left_out:
                omitted[resource] = left_out
        entry: dict[str, Any] = {
            "container": report.container,
            "best": _hint_json(report.best),
            "why": _why(report, policy),
            "providers": providers,
            "notes": list(report.notes),
        }
        if omitted:
            entry["omitted"] = omitted
        hints.append(entry)
    return {
        "pod": result.pod_key,
        "node": profile.name,
        "policy": policy,
        "scope": profile.kubelet.topology_manager_scope,
        "admit": result.admit,
        "reason": result.reason,
        "message": result.message,
        "hints": hints,
        "allocation": allocation,
        "dra": None if dra is None else dra_json(dra, profile),
    }


def numa_set(numa: Sequence[int] | None) -> str:
    return "any NUMA node" if numa is None else "{" + ",".join(str(n) for n in numa) + "}"


def _size(n: int) -> str:
    for unit, factor in (("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024)):
        if n and n % factor == 0:
            return f"{n // factor}{unit}"
    return str(n)


def _resource_line(resource: str, hints: Sequence[ProviderHint], *, verbose: bool) -> str:
    if len(hints) == 1 and hints[0].numa is None:
        if hints[0].preferred:
            return f"{resource}: no NUMA preference"
        return f"{resource}: no NUMA set can satisfy the request"
    kept, _ = shown_hints(hints, verbose=verbose)
    more_preferred = sum(h.preferred for h in hints) - sum(h.preferred for h in kept)
    more_other = sum(not h.preferred for h in hints) - sum(not h.preferred for h in kept)
    preferred = [numa_set(h.numa) for h in kept if h.preferred]
    other = [numa_set(h.numa) for h in kept if not h.preferred]
    if more_preferred:
        preferred.append(f"{more_preferred} more")
    if more_other:
        other.append(f"{more_other} more")
    text = f"{resource}: prefers {' or '.join(preferred)}" if preferred else f"{resource}: "
    if other:
        text += ("; also fits " if preferred else "only fits ") + ", ".join(other)
        text += " (not preferred)"
    if more_preferred or more_other:
        text += " [--verbose lists every hint]"
    return text


def _why(report: HintReport, policy: str) -> str:
    providers = report.providers
    if policy == "none":
        return "policy none: no alignment"
    if report.best.preferred:
        wanting = [r for r, hs in providers.items() if not (len(hs) == 1 and hs[0].numa is None)]
        if not wanting:
            return "no resource has a NUMA preference"
        if len(wanting) == 1:
            return f"{wanting[0]} prefers {numa_set(report.best.numa)}"
        return f"{', '.join(wanting)} all prefer {numa_set(report.best.numa)}"
    impossible = [
        r
        for r, hs in providers.items()
        if len(hs) == 1 and hs[0].numa is None and not hs[0].preferred
    ]
    if impossible:
        return f"{', '.join(impossible)}: not enough free on any NUMA set"
    if policy == "single-numa-node":
        lacking = [
            r
            for r, hs in providers.items()
            if not any(h.preferred and (h.numa is None or len(h.numa) == 1) for h in hs)
        ]
        if lacking:
            return (
                "single-numa-node keeps only preferred single-NUMA hints, and "
                f"{', '.join(lacking)} has none"
            )
        return "no single NUMA node is preferred by every resource"
    return (
        "no NUMA set is preferred by every resource (a merged hint is preferred only when "
        "all its hints are preferred and name the same NUMA set)"
    )


#: Go's strconv.ParseBool true values (option values as the kubelet reads them).
_TRUE = ("1", "t", "T", "TRUE", "true", "True")


def render_text(
    result: AdmissionResult,
    profile: NodeProfile,
    *,
    verbose: bool = False,
    dra: DraOutcome | None = None,
) -> str:
    """A few lines explaining one verdict; each provider's hints are cut to the first
    :data:`SHOWN_HINTS` of each kind unless ``verbose``."""
    policy = profile.kubelet.topology_manager_policy
    verdict = "ADMITTED" if result.admit else f"REJECTED {result.reason}: {result.message}"
    options = [name for name, value in profile.kubelet.cpu_policy_options.items() if value in _TRUE]
    with_options = f", CPU Manager options {', '.join(sorted(options))}" if options else ""
    lines = [
        f"pod {result.pod_key} on node {profile.name} ({policy}, "
        f"{profile.kubelet.topology_manager_scope} scope{with_options}): {verdict}"
    ]
    if result.reason == SMT_ALIGNMENT_ERROR:
        lines.append(
            "  full-pcpus-only: the hints merged, then the CPU Manager's Allocate refused - "
            "it hands out whole physical cores only"
        )
    for report in result.hints:
        who = f"container {report.container}" if report.container else "pod"
        kind = "preferred" if report.best.preferred else "not preferred"
        best = f"{numa_set(report.best.numa)} ({kind})"
        lines.append(f"  {who}: best hint {best} - {_why(report, policy)}")
        lines.extend(
            f"    {_resource_line(r, hs, verbose=verbose)}" for r, hs in report.providers.items()
        )
        lines.extend(f"    note: {n}" for n in report.notes)
    if not result.hints and policy == "none":
        lines.append("  policy none: no hints gathered, resources allocated without alignment")
    if result.allocation is not None:
        for c in result.allocation.containers:
            parts = []
            if c.cpus:
                parts.append(f"cpus {format_cpulist(c.cpus)}")
            parts.extend(f"{k} {','.join(v)}" for k, v in sorted(c.devices.items()))
            parts.extend(
                f"{b.type} {_size(b.size)} on {numa_set(sorted(b.numa))}" for b in c.memory
            )
            lines.append(
                f"  {c.name} ({c.kind}): {'; '.join(parts) if parts else 'nothing exclusive'}"
            )
    if dra is not None:
        lines.extend(dra_text(dra, profile))
    return "\n".join(lines)
