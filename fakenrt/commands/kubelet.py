"""``fakenrt kubelet``: the kubelet Topology Manager simulator on the command line.

``fakenrt kubelet explain`` admits pods, in the order given, against one node of a
profile file and says what the kubelet would decide and why.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import click

from exporter.validation import quoted
from fakenrt.commands.params import Name, listed
from fakenrt.commands.podfiles import InputError, parse_pods, read_pods_and_claims
from fakenrt.dra.claims import ResourceClaim
from fakenrt.kubelet.allocation import AdmissionResult
from fakenrt.kubelet.explain import SHOWN_HINTS, render_text, result_json
from fakenrt.kubelet.explain_dra import DraOutcome, outcome
from fakenrt.kubelet.node import NodeState
from fakenrt.profiles import ProfileError, load_profiles
from fakenrt.profiles.model import NodeProfile

__all__ = ["Explained", "InputError", "new_node_state", "parse_pods", "pick_node", "run"]


def pick_node(profiles: Sequence[NodeProfile], name: str | None, *, source: str) -> NodeProfile:
    names = [p.name for p in profiles]
    if name is None:
        if len(profiles) == 1:
            return profiles[0]
        raise InputError(
            f"{source} has {len(profiles)} nodes ({listed(names)}): pick one with --node"
        )
    for p in profiles:
        if p.name == name:
            return p
    raise InputError(f"--node {quoted(name)}: no such node in {source} (nodes: {listed(names)})")


def new_node_state(profile: NodeProfile, *, source: str) -> NodeState:
    try:
        return NodeState.from_profile(profile)
    except ValueError as exc:
        raise InputError(f"{source}: node {profile.name}: {exc}") from None


@dataclass(frozen=True)
class Explained:
    profile: NodeProfile
    results: tuple[AdmissionResult, ...]
    #: Per result: what became of the pod's ResourceClaims (None: none, or rejected).
    dra: tuple[DraOutcome | None, ...] = ()


def run(*, profile_path: str, node: str | None, pod_paths: Sequence[str]) -> Explained:
    """Admit the pods in order on the chosen node, each admitted pod's ResourceClaims
    prepared right after its admission (claims given in the same files, as allocated by
    the scheduler). Raises :class:`InputError`."""
    try:
        profiles = load_profiles(profile_path)
    except ProfileError as exc:
        raise InputError(str(exc)) from None
    profile = pick_node(profiles, node, source=profile_path)
    pods, claims = read_pods_and_claims(pod_paths)
    by_name: dict[tuple[str, str], ResourceClaim] = {(c.namespace, c.name): c for c in claims}
    state = new_node_state(profile, source=profile_path)
    results: list[AdmissionResult] = []
    dra: list[DraOutcome | None] = []
    for pod in pods:
        result = state.admit(pod)
        results.append(result)
        if not result.admit or not pod.resource_claims:
            dra.append(None)
            continue
        error = state.prepare(pod.key, lambda ns, name: by_name.get((ns, name)))
        dra.append(outcome(profile, state.allocations()[pod.key], error))
    return Explained(profile, tuple(results), tuple(dra))


def render(explained: Explained, *, as_json: bool, verbose: bool = False) -> str:
    profile = explained.profile
    pairs = list(
        zip(explained.results, explained.dra or [None] * len(explained.results), strict=True)
    )
    if as_json:
        return json.dumps(
            [result_json(r, profile, verbose=verbose, dra=d) for r, d in pairs], indent=2
        )
    return "\n\n".join(render_text(r, profile, verbose=verbose, dra=d) for r, d in pairs)


@click.group("kubelet")
def kubelet() -> None:
    """Simulate the kubelet's Topology Manager admission on a fake NUMA node."""


@kubelet.command("explain")
@click.option(
    "--profile",
    "profile_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="Node profile YAML file (one or more nodes).",
)
@click.option(
    "--node",
    type=Name(),
    default=None,
    help="Node of the profile file; required when it has several.",
)
@click.option(
    "--pod",
    "pod_paths",
    required=True,
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Pod manifest YAML (multi-document allowed); repeat for more. Admitted in order. "
    "May also hold the ResourceClaims (resource.k8s.io/v1, with their allocation) the pods use.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array, one object per pod.")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help=f"List every hint of every provider (default: the first {SHOWN_HINTS} preferred and "
    f"{SHOWN_HINTS} other hints each; nodes with many NUMA nodes have thousands).",
)
def explain(
    *,
    profile_path: str,
    node: str | None,
    pod_paths: tuple[str, ...],
    as_json: bool,
    verbose: bool,
) -> None:
    """Say what the kubelet decides for each pod - admit or reject, and which CPUs,
    devices and memory each container receives - and why; for pods with ResourceClaims,
    whether the kubelet can prepare them and whether the pod will run misaligned."""
    try:
        explained = run(profile_path=profile_path, node=node, pod_paths=pod_paths)
    except InputError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(render(explained, as_json=as_json, verbose=verbose))
