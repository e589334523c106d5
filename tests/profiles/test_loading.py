"""load_profiles: files, YAML errors and duplicate keys become ProfileErrors naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakenrt.profiles import ProfileError, example_profile, load_profiles


def test_loads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("nodes:\n- name: n\n  zones: [{id: 0, cpus: '0-3', memory: 1Gi}]\n")
    (profile,) = load_profiles(path)
    assert profile.name == "n"
    assert load_profiles(str(path)) == (profile,)


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        pytest.param("nodes: [\n", "not valid YAML", id="syntax"),
        pytest.param(
            "nodes:\n- name: n\n  zones:\n  - id: 0\n    cpus: '0'\n"
            "    memory: 1Gi\n    memory: 2Gi\n",
            "duplicate key 'memory' (line 7, column 5)",
            id="duplicate-key",
        ),
        pytest.param(
            "---\nnodes: []\n---\nnodes: []\n",
            "2 YAML documents where one is expected",
            id="two-documents",
        ),
        pytest.param("", "the file is empty", id="empty"),
    ],
)
def test_yaml_problems_name_the_file(tmp_path: Path, text: str, detail: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError) as caught:
        load_profiles(path)
    assert caught.value.source == str(path)
    assert detail in str(caught.value)
    assert str(caught.value).startswith(f"{path}: ")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match=r"missing\.yaml: cannot read the file: No such file"):
        load_profiles(tmp_path / "missing.yaml")


def test_example_profile_lookup() -> None:
    assert example_profile("shapes") == example_profile("shapes.yaml")
    with pytest.raises(ProfileError, match="no such example profile; examples: ") as caught:
        example_profile("nope")
    listed = str(caught.value).rsplit("examples: ", 1)[1].split(", ")
    assert {"dgx", "shapes"} <= set(listed)
    assert listed == sorted(listed)


def test_shapes_example_has_the_advertised_nodes() -> None:
    nodes = {p.name: p for p in load_profiles(example_profile("shapes"))}
    assert {n: len(p.zones) for n, p in nodes.items()} == {
        "gpu-2numa": 2,
        "gpu-4numa": 4,
        "gpu-8numa": 8,
    }
    dgx = nodes["gpu-2numa"]
    assert len(dgx.cpu_topology) == 224
    assert sum(len(z.devices["nvidia.com/gpu"].ids) for z in dgx.zones) == 8
    assert dgx.cpu_topology[0].core == dgx.cpu_topology[112].core


def test_every_yaml_example_in_the_docs_is_a_valid_profile() -> None:
    import re

    from fakenrt.profiles import parse_profiles
    from fakenrt.profiles.loading import load_yaml

    doc = Path(__file__).resolve().parents[2] / "docs" / "profiles.md"
    blocks = re.findall(r"```yaml\n(.*?)```", doc.read_text(), flags=re.DOTALL)
    assert blocks
    for block in blocks:
        assert parse_profiles(load_yaml(block, source="docs"), source="docs")
