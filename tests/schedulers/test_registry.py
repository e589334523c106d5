"""Finding the adapters and picking them by name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from schedulers import registry
from schedulers.adapter import Adapter, Claim

REPO = Path(__file__).resolve().parents[2]


def test_every_adapter_is_well_formed_and_each_scheduler_has_a_default_mode() -> None:
    adapters = registry.adapters()
    assert len({a.id for a in adapters}) == len(adapters)
    for name in registry.scheduler_names():
        assert any(a.default for a in adapters if a.scheduler == name), name


def test_the_reference_modes() -> None:
    ids = [a.id for a in registry.select(["reference"], every_mode=True)]
    assert ids == ["reference-reconstruction", "reference-stale-nrt"]
    (default,) = registry.select(["reference"], every_mode=False)
    assert default.id == "reference-reconstruction" and default.claims == frozenset(Claim)
    (stale,) = registry.select(["reference-stale-nrt"], every_mode=False)
    assert stale.trusts_stale_nrt and Claim.LAG_SAFE not in stale.claims


def test_all_picks_every_scheduler_once() -> None:
    every = registry.select(["all", "reference"], every_mode=True)
    assert [a.id for a in every] == [a.id for a in registry.adapters()]
    defaults = registry.select(["all"], every_mode=False)
    assert {a.scheduler for a in defaults} == set(registry.scheduler_names())
    assert all(a.default for a in defaults)


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown scheduler 'nope'; known: all, .*reference"):
        registry.select(["nope"], every_mode=False)


@pytest.mark.parametrize(
    ("name", "reads"),
    [("volcano", {"volcano": True}), ("koordinator", {"koordlet": True})],
)
def test_schedulers_reading_other_agents_objects_have_their_nodes_publish_them(
    name: str, reads: dict[str, bool]
) -> None:
    for adapter in registry.select([name], every_mode=True):
        assert dict(adapter.nrt) == reads
        assert adapter.build is not None and adapter.install  # CRDs, from their source


def test_koordinators_modes() -> None:
    ids = [a.id for a in registry.select(["koordinator"], every_mode=True)]
    assert ids == ["koordinator-koordlet", "koordinator-node-label"]
    (default,) = registry.select(["koordinator"], every_mode=False)
    assert default.id == "koordinator-koordlet" and not default.node_labels


def test_the_documented_example_adapter_is_well_formed(tmp_path: Path) -> None:
    """docs/schedulers/README.md's one-file adapter, as written (its config file beside it)."""
    readme = (REPO / "docs" / "schedulers" / "README.md").read_text()
    (block,) = re.findall(r"^```python\n(.*?)^```", readme, re.S | re.M)
    module = tmp_path / "mysched.py"
    module.write_text(block)
    (tmp_path / "mysched.yaml").write_text("name: {scheduler_name}\n")
    namespace: dict[str, object] = {"__file__": str(module), "__name__": "mysched"}
    exec(compile(block, str(module), "exec"), namespace)
    declared = namespace["ADAPTERS"]
    assert isinstance(declared, tuple) and len(declared) == 1
    adapter = declared[0]
    assert isinstance(adapter, Adapter)
    adapter.check()
    assert adapter.id == "mysched" and adapter.here == tmp_path
