"""``fakenrt demo``: the kubelet simulator on bundled examples, explained.

Runs the real simulator (:mod:`fakenrt.kubelet`) on the example pods of
``fakenrt/examples/pods`` against the example profiles of ``fakenrt/examples/profiles``
and prints each verdict with its reasons: the worked examples of the KAI NUMA design
(the restricted table, the 3/3/2-core single-numa-node case) and a DGX-like node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import click

from fakenrt.commands.kubelet import InputError, new_node_state, parse_pods
from fakenrt.kubelet.explain import render_text
from fakenrt.podspec import PodSpec
from fakenrt.profiles import ProfileError, example_profile, load_profiles
from fakenrt.profiles.model import NodeProfile

PODS_PACKAGE = "fakenrt.examples.pods"


@dataclass(frozen=True)
class Scenario:
    title: str
    profile: str
    #: (node name, pod names or () for all pods of the file, in order).
    runs: tuple[tuple[str, tuple[str, ...]], ...]
    pods: str
    #: Judge every pod on an empty node (a table of independent rows).
    fresh_node_per_pod: bool = False


SCENARIOS = (
    Scenario(
        "Seed 000, the restricted table: each row on an empty node",
        "demo",
        (("seed000-4gpu", ("gpu6-cpu10", "gpu6-cpu24")), ("seed000-2gpu", ("gpu4-cpu1",))),
        "seed000-restricted.yaml",
        fresh_node_per_pod=True,
    ),
    Scenario(
        "Seed 000, single-numa-node: pods of 3, 3 and 2 cores on two 4-core zones",
        "demo",
        (("seed000-4core", ()),),
        "seed000-single-numa.yaml",
    ),
    Scenario(
        "A DGX-like node (examples/profiles/dgx.yaml, node dgx-a)",
        "dgx",
        (("dgx-a", ()),),
        "dgx-training.yaml",
    ),
)


def bundled_pods(file_name: str) -> list[PodSpec]:
    text = resources.files(PODS_PACKAGE).joinpath(file_name).read_text(encoding="utf-8")
    return parse_pods(text, source=f"examples/pods/{file_name}")


def _node(profiles: Sequence[NodeProfile], name: str) -> NodeProfile:
    for p in profiles:
        if p.name == name:
            return p
    raise InputError(f"example profile has no node {name!r}")


def run_scenario(scenario: Scenario) -> list[str]:
    """The explanation blocks of one scenario."""
    profiles = load_profiles(example_profile(scenario.profile))
    pods = bundled_pods(scenario.pods)
    blocks: list[str] = []
    for node_name, wanted in scenario.runs:
        profile = _node(profiles, node_name)
        chosen = [p for p in pods if not wanted or p.name in wanted]
        state = new_node_state(profile, source=scenario.profile)
        for pod in chosen:
            if scenario.fresh_node_per_pod:
                state = new_node_state(profile, source=scenario.profile)
            blocks.append(render_text(state.admit(pod), profile))
    return blocks


def render_demo() -> str:
    sections = [
        "\n\n".join([f"== {i}. {scenario.title}", *run_scenario(scenario)])
        for i, scenario in enumerate(SCENARIOS, 1)
    ]
    return "\n\n\n".join(sections) + "\n"


@click.command("demo")
def demo() -> None:
    """Run the kubelet simulator on bundled example pods and nodes and explain every
    verdict (the seed examples of the KAI NUMA design and a DGX-like node)."""
    try:
        click.echo(render_demo(), nl=False)
    except (InputError, ProfileError) as exc:
        raise click.ClickException(str(exc)) from None
