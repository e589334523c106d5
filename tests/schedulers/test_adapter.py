"""The adapter interface: placeholders, ids, scheduler names and the checks on an adapter."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from schedulers.adapter import (
    Adapter,
    Component,
    Placeholders,
    Unschedulable,
    argv,
    expand,
    node_label,
)


def _values(**changes: Any) -> Placeholders:
    ports = {"metrics": 9100, "health": 9101}
    base = Placeholders(
        kubeconfig=Path("/a b/kc"),
        scheduler_name="kai-e2e-1",
        node_selector_key="fakenrt.io/controller",
        node_selector_value="e2e-1",
        workdir=Path("/w"),
        bin=Path("/cache/kai"),
        here=Path("/repo/schedulers/kai"),
        port=ports.__getitem__,
        topology_policy="restricted",
    )
    return replace(base, **changes)


def _adapter(**changes: Any) -> Adapter:
    base = Adapter(
        scheduler="mine",
        scheduler_name="mine",
        components=(Component(name="scheduler", command="s --kubeconfig {kubeconfig}"),),
    )
    return replace(base, **changes)


def test_every_placeholder_is_filled_in_each_argument_on_its_own() -> None:
    words = argv(
        "{bin}/scheduler --kubeconfig {kubeconfig} --name={scheduler_name} "
        "--sel '{node_selector}' --key {node_selector_key} --value {node_selector_value} "
        "--conf {workdir}/c.yaml --here {here} --metrics :{port:metrics} --health :{port:health}"
        " --policy {topology_policy}",
        _values(),
        where="test",
    )
    assert words == [
        "/cache/kai/scheduler", "--kubeconfig", "/a b/kc", "--name=kai-e2e-1",
        "--sel", "fakenrt.io/controller=e2e-1", "--key", "fakenrt.io/controller",
        "--value", "e2e-1", "--conf", "/w/c.yaml", "--here", "/repo/schedulers/kai",
        "--metrics", ":9100", "--health", ":9101", "--policy", "restricted",
    ]  # fmt: skip


def test_braces_that_are_not_placeholders_are_left_alone() -> None:
    yaml_text = "leaderElection: {leaderElect: false}\nargs: {}\nname: {scheduler_name}\n"
    assert expand(yaml_text, _values(), where="f") == (
        "leaderElection: {leaderElect: false}\nargs: {}\nname: kai-e2e-1\n"
    )


@pytest.mark.parametrize(
    ("template", "complaint"),
    [
        pytest.param("--k {kubecfg}", "unknown placeholder {kubecfg}", id="unknown"),
        pytest.param("--p {port}", "unknown placeholder {port}", id="port-without-name"),
        pytest.param("--w {workdir:x}", "unknown placeholder {workdir:x}", id="argument"),
    ],
)
def test_unknown_placeholders_are_refused_naming_where(template: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=rf"^here: {complaint}"):
        expand(template, _values(), where="here")


def test_bin_without_a_build_is_refused() -> None:
    with pytest.raises(ValueError, match="no build"):
        expand("{bin}/x", _values(bin=None), where="w")


def test_unbalanced_quotes_and_empty_commands_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^c: No closing quotation"):
        argv("s 'x", _values(), where="c")
    with pytest.raises(ValueError, match=r"^c: empty command"):
        argv("  ", _values(), where="c")


def test_id_and_scheduler_name_per_deployment() -> None:
    one = _adapter()
    assert one.id == "mine" and one.name_for("e2e-1") == "mine-e2e-1"
    moded = _adapter(mode="trust-nrt", fixed_name=True)
    assert moded.id == "mine-trust-nrt" and moded.name_for("e2e-1") == "mine"


@pytest.mark.parametrize(
    ("changes", "complaint"),
    [
        pytest.param({"components": ()}, "no components", id="no-components"),
        pytest.param({"mode": "Bad Mode"}, "lowercase words", id="bad-id"),
        pytest.param(
            {"unschedulable": Unschedulable(reason="(")}, "unschedulable.reason", id="bad-regex"
        ),
        pytest.param(
            {"components": (Component(name="s", command="s {nope}"),)},
            "component 's', command: unknown placeholder {nope}",
            id="bad-command",
        ),
        pytest.param(
            {"components": (Component(name="s", command="s", env={"A": "{x}"}),)},
            "env A: unknown placeholder",
            id="bad-env",
        ),
        pytest.param({"files": {"c.yaml": "a: {y}"}}, "file 'c.yaml'", id="bad-file"),
        pytest.param({"pod_labels": {"q": "{z}"}}, "pod label/annotation q", id="bad-label"),
        pytest.param({"claim_labels": {"q": "{z}"}}, "claim label q", id="bad-claim-label"),
        pytest.param({"files": {"/etc/c": "x"}}, "inside", id="absolute-file"),
        pytest.param({"files": {"../c": "x"}}, "inside", id="file-outside-workdir"),
    ],
)
def test_check_names_the_adapter_and_the_field(changes: dict[str, object], complaint: str) -> None:
    with pytest.raises(ValueError, match=f"scheduler adapter '.*'[:,] .*{complaint}"):
        _adapter(**changes).check()


def test_file_templates_may_be_files_beside_the_module(tmp_path: Path) -> None:
    (tmp_path / "conf.yaml").write_text("name: {scheduler_name}\n")
    adapter = _adapter(
        files={"c.yaml": Path("conf.yaml"), "d": "inline", "conf/e": "in a directory"},
        here=tmp_path,
    )
    adapter.check()
    assert adapter.file_text("c.yaml") == "name: {scheduler_name}\n"
    assert adapter.file_text("d") == "inline"


@pytest.mark.parametrize(
    ("template", "policy", "value"),
    [
        ("{topology_policy}", "restricted", "restricted"),
        ("{topology_policy:koordinator}", "single-numa-node", "SingleNUMANode"),
        ("{topology_policy:koordinator}", "restricted", "Restricted"),
        ("{topology_policy:koordinator}", "best-effort", "BestEffort"),
        ("{topology_policy:koordinator}", "none", ""),
    ],
)
def test_node_labels_spell_each_nodes_policy(template: str, policy: str, value: str) -> None:
    assert node_label(template, policy, where="t") == value
    assert expand(template, _values(topology_policy=policy), where="t") == value


@pytest.mark.parametrize(
    ("template", "complaint"),
    [
        ("{topology_policy:volcano}", "unknown policy spelling 'volcano'; use koordinator"),
        ("{scheduler_name}", "node labels may use {topology_policy}"),
    ],
)
def test_bad_node_labels_are_refused_naming_the_adapter(template: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=re.escape(complaint)):
        _adapter(node_labels={"example.com/policy": template}).check()
