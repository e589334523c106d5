"""`fakenrt nrt render`: the objects a profile gives, as YAML or JSON, no API server."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from fakenrt.cli import main
from fakenrt.nrt import render_nrt
from fakenrt.profiles import example_profile, load_profiles


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["nrt", "render", *args])
    return result.exit_code, result.stdout, result.stderr


def test_yaml_is_one_document_per_node() -> None:
    path = example_profile("shapes")
    code, out, _ = _run("--profile", str(path))
    assert code == 0
    docs = list(yaml.safe_load_all(out))
    assert docs == [render_nrt(p, usage=None) for p in load_profiles(path)]
    assert [d["metadata"]["name"] for d in docs] == ["gpu-2numa", "gpu-4numa", "gpu-8numa"]


def test_json_is_one_list_and_node_selects() -> None:
    path = example_profile("dgx")
    code, out, _ = _run("--profile", str(path), "--json", "--node", "small")
    assert code == 0
    objects = json.loads(out)
    assert [o["metadata"]["name"] for o in objects] == ["small"]
    assert objects[0] == render_nrt(load_profiles(path)[1], usage=None)


def test_unknown_node_is_a_usage_error() -> None:
    code, out, err = _run("--profile", str(example_profile("dgx")), "--node", "nope")
    assert code == 2
    assert out == ""
    assert "no node 'nope'" in err and "nodes: dgx-a, small" in err


def test_invalid_profile_exits_non_zero_with_the_profile_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("nodes:\n- name: n\n  kubelet: {topologyManagerPolicy: strict}\n  zones: []\n")
    code, out, err = _run("--profile", str(path))
    assert code == 1
    assert out == ""
    assert f"{path}: node \"n\": kubelet.topologyManagerPolicy: unknown value 'strict'" in err
