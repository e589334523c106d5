"""One pod against one node, from plain objects: what ``fakenrt scheduler evaluate`` prints.
Pure (the command reads the files)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from exporter.annotations import zone_name
from fakenrt.kubelet.podcheck import api_errors
from fakenrt.podspec import PodSpecError, pod_from_manifest
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.nrt import read_nrt
from fakenrt.scheduler.plugin import NumaPlugin, Scores
from fakenrt.scheduler.reconstruction import node_pod_from_manifest, reconstruct


@dataclass(frozen=True)
class NodeEvaluation:
    fit: bool
    reason: str | None
    zones: tuple[str, ...]
    scores: Scores
    #: placement-less pods on the node (reconstruction does not guess them)
    unplaced: tuple[str, ...] = ()
    #: the NRT pod fingerprint matched the pods on the node: NRT available was used
    nrt_exact: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "fit": self.fit,
            "reason": self.reason,
            "zones": list(self.zones),
            "scores": dict(self.scores.values),
        }


def evaluate_on_node(
    nrt: Mapping[str, Any],
    pod: Mapping[str, Any],
    pods_on_node: Iterable[tuple[str, Mapping[str, Any]]] | None = None,
    args: PluginArgs | None = None,
    *,
    nrt_source: str = "nrt",
    pod_source: str = "pod",
) -> NodeEvaluation:
    """Filter and score ``pod`` on the node ``nrt`` describes. ``pods_on_node`` pairs each
    manifest with a source label for error messages; None means the pods on the node are
    not known, so there is nothing to reconstruct from and NRT ``available`` is trusted.
    Raises NRTError, PodSpecError or ReconstructionError naming the source, object and
    field."""
    plugin = NumaPlugin(args)
    topology = read_nrt(nrt, source=nrt_source)
    spec = pod_from_manifest(pod, source=pod_source)
    # What the API server refuses (fractional devices, ...) the kubelet never sees: the
    # same rule `fakenrt kubelet explain` applies.
    errors = api_errors(spec, source=pod_source)
    if errors:
        raise PodSpecError("; ".join(errors))
    unplaced: tuple[str, ...] = ()
    nrt_exact = False
    if plugin.args.reconstruct_available and pods_on_node is not None:
        node_pods = [node_pod_from_manifest(m, source=s) for s, m in pods_on_node]
        rebuilt = reconstruct(topology, node_pods, strict=True)
        ledger = rebuilt.ledger
        unplaced = rebuilt.unplaced
        nrt_exact = rebuilt.nrt_exact
    else:
        ledger = ZoneLedger.from_nrt(topology)
    result = plugin.filter(spec, topology, ledger)
    scores = plugin.score(spec, topology, ledger, result)
    return NodeEvaluation(
        fit=result.fit,
        reason=result.reason,
        zones=tuple(zone_name(z) for z in result.placement.zones),
        scores=scores,
        unplaced=unplaced,
        nrt_exact=nrt_exact,
    )
