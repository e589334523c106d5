"""The differential test as a hypothesis property: random profile nodes (every policy,
scope, CPU Manager option, hugepages, unhealthy and no-affinity devices, foreign
``allocated``) and random pods admitted then released by the kubelet simulator; the
publisher's object, read over podresources, sysfs and the kubelet configuration, equals
the fake controller's at every step (with the stated exceptions of
``test_differential``)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakenrt.podspec import PodSpec
from fakenrt.profiles.model import NodeProfile
from tests.kubelet.test_properties import pods, profiles
from tests.nrtpub.test_differential import run_differential


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[NodeProfile, list[PodSpec]]:
    profile = draw(profiles())
    hugepages = any(z.hugepages for z in profile.zones)
    count = draw(st.integers(1, 6))
    return profile, [draw(pods(i, hugepages)) for i in range(count)]


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_publisher_agrees_with_the_fake_controller_on_random_nodes(
    scenario: tuple[NodeProfile, list[PodSpec]],
) -> None:
    profile, pod_specs = scenario
    failures = run_differential(profile, pod_specs)
    assert not failures, "\n".join(failures[:2])
