"""``fakenrt kubelet``: the kubelet Topology Manager simulator on the command line.

``fakenrt kubelet explain`` admits pods, in the order given, against one node of a
profile file and says what the kubelet would decide and why.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import yaml

from fakenrt.kubelet.allocation import AdmissionResult
from fakenrt.kubelet.explain import render_text, result_json
from fakenrt.kubelet.node import NodeState
from fakenrt.kubelet.podcheck import api_errors
from fakenrt.podspec import PodSpec, PodSpecError, pod_from_manifest
from fakenrt.profiles import ProfileError, load_profiles
from fakenrt.profiles.model import NodeProfile


class InputError(ValueError):
    """Invalid pod or profile input; the message names the file, the object and the field."""


def parse_pods(text: str, *, source: str) -> list[PodSpec]:
    """Every Pod of a (multi-document) YAML text; ``kind: List`` items are expanded."""
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not valid YAML: {' '.join(str(exc).split())}") from None
    manifests: list[Any] = []
    for doc in documents:
        if isinstance(doc, dict) and doc.get("kind") == "List":
            items = doc.get("items")
            if not isinstance(items, list):
                raise InputError(f"{source}: a List must have an 'items' list")
            manifests.extend(items)
        else:
            manifests.append(doc)
    if not manifests:
        raise InputError(f"{source}: no Pod found")
    pods: list[PodSpec] = []
    for i, manifest in enumerate(manifests):
        where = source if len(manifests) == 1 else f"{source} (document {i + 1})"
        try:
            pod = pod_from_manifest(manifest, source=where)
        except PodSpecError as exc:
            raise InputError(str(exc)) from None
        errors = api_errors(pod, source=where)
        if errors:
            raise InputError("; ".join(errors))
        pods.append(pod)
    return pods


def read_pods(paths: Iterable[str]) -> list[PodSpec]:
    pods: list[PodSpec] = []
    seen: dict[str, str] = {}
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise InputError(f"{path}: cannot read the file: {reason}") from None
        for pod in parse_pods(text, source=path):
            if pod.key in seen:
                raise InputError(f"{path}: pod {pod.key} is already given in {seen[pod.key]}")
            seen[pod.key] = path
            pods.append(pod)
    return pods


def pick_node(profiles: Sequence[NodeProfile], name: str | None, *, source: str) -> NodeProfile:
    names = [p.name for p in profiles]
    if name is None:
        if len(profiles) == 1:
            return profiles[0]
        raise InputError(
            f"{source} has {len(profiles)} nodes ({', '.join(names)}): pick one with --node"
        )
    for p in profiles:
        if p.name == name:
            return p
    raise InputError(f"{source}: no node named {name!r} (nodes: {', '.join(names)})")


def new_node_state(profile: NodeProfile, *, source: str) -> NodeState:
    try:
        return NodeState.from_profile(profile)
    except ValueError as exc:
        raise InputError(f"{source}: node {profile.name}: {exc}") from None


@dataclass(frozen=True)
class Explained:
    profile: NodeProfile
    results: tuple[AdmissionResult, ...]


def run(*, profile_path: str, node: str | None, pod_paths: Sequence[str]) -> Explained:
    """Admit the pods in order on the chosen node. Raises :class:`InputError`."""
    try:
        profiles = load_profiles(profile_path)
    except ProfileError as exc:
        raise InputError(str(exc)) from None
    profile = pick_node(profiles, node, source=profile_path)
    pods = read_pods(pod_paths)
    state = new_node_state(profile, source=profile_path)
    return Explained(profile, tuple(state.admit(p) for p in pods))


def render(explained: Explained, *, as_json: bool) -> str:
    if as_json:
        return json.dumps([result_json(r) for r in explained.results], indent=2)
    return "\n\n".join(render_text(r, explained.profile) for r in explained.results)


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
    "--node", default=None, help="Node of the profile file; required when it has several."
)
@click.option(
    "--pod",
    "pod_paths",
    required=True,
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Pod manifest YAML (multi-document allowed); repeat for more. Admitted in order.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array, one object per pod.")
def explain(profile_path: str, node: str | None, pod_paths: tuple[str, ...], as_json: bool) -> None:
    """Say what the kubelet decides for each pod - admit or reject, and which CPUs,
    devices and memory each container receives - and why."""
    try:
        explained = run(profile_path=profile_path, node=node, pod_paths=pod_paths)
    except InputError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(render(explained, as_json=as_json))
