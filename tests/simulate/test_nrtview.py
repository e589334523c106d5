"""The simulation's typed NRT (fakenrt.simulate.nrtview) is exactly what the scheduler
reads back from the object the controller core renders for the same state, and the
static part it shares between publications is the static part of every one of them."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fakenrt.controller.effects import NrtSnapshot
from fakenrt.nrt import render_nrt
from fakenrt.profiles import parse_profiles
from fakenrt.profiles.model import NodeProfile
from fakenrt.profiles.resources import zone_capacity
from fakenrt.scheduler.nrt import read_nrt
from fakenrt.simulate.nrtview import NrtView

EXAMPLES = Path(__file__).resolve().parents[2] / "fakenrt" / "examples"


def _profiles() -> tuple[NodeProfile, ...]:
    out: list[NodeProfile] = []
    for path in (
        EXAMPLES / "simulate" / "cluster.yaml",
        EXAMPLES / "profiles" / "dgx.yaml",
        EXAMPLES / "profiles" / "shapes.yaml",
    ):
        out += parse_profiles(yaml.safe_load(path.read_text()), source=str(path))
    return tuple(out)


PROFILES = _profiles()


@st.composite
def published(draw: st.DrawFn) -> tuple[NodeProfile, NrtSnapshot]:
    profile = draw(st.sampled_from(PROFILES))
    usage: dict[int, dict[str, int]] = {}
    for zone, capacity in zone_capacity(profile).items():
        if draw(st.booleans()):
            usage[zone] = {
                name: draw(st.integers(0, amount + 2))
                for name, amount in capacity.items()
                if draw(st.booleans())
            }
    pods = draw(st.lists(st.sampled_from(["a/p", "b/q", "kube-system/x", "ml/train-0"])))
    return profile, NrtSnapshot(usage=usage, pods=tuple(sorted(set(pods))))


@settings(max_examples=300, deadline=None)
@given(cases=st.lists(published(), min_size=1, max_size=4))
def test_the_typed_nrt_is_the_rendered_one_read_back(
    cases: list[tuple[NodeProfile, NrtSnapshot]],
) -> None:
    views: dict[str, NrtView] = {}
    for profile, snapshot in cases:
        view = views.setdefault(profile.name, NrtView(profile))
        typed = view.of(snapshot)
        body = render_nrt(profile, usage=snapshot.usage, pods=snapshot.pods)
        read = read_nrt(body, source="test")
        assert typed == read
        # What is shared between publications is what reading the object gives.
        for name in ("static", "reported", "unaligned", "distances", "combinations"):
            assert getattr(typed, name) == getattr(read, name)
