"""The scheduler-under-test options: placeholders and the checks on what a user gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.schedulers import RECONSTRUCTION, STALE_NRT, from_options


def test_placeholders_are_filled_per_argument() -> None:
    scheduler = from_options(
        name="topo",
        command="kube-scheduler --kubeconfig {kubeconfig} --name={scheduler_name} "
        "--sel '{node_selector}' --dir {workdir}/x",
        reason="cannot align",
    )
    assert scheduler is not None
    argv = scheduler.argv(
        kubeconfig=Path("/a b/kc"), node_selector="fakenrt.io/controller=e2e", workdir=Path("/w")
    )
    assert argv == [
        "kube-scheduler", "--kubeconfig", "/a b/kc", "--name=topo",
        "--sel", "fakenrt.io/controller=e2e", "--dir", "/w/x",
    ]  # fmt: skip
    assert scheduler.name == "topo" and not scheduler.trusts_stale_nrt


def test_no_options_means_the_reference_modes() -> None:
    assert from_options(name=None, command=None, reason="x") is None


@pytest.mark.parametrize(
    ("name", "command", "reason", "complaint"),
    [
        pytest.param("topo", None, "x", "go together", id="name-only"),
        pytest.param(None, "kube-scheduler", "x", "go together", id="command-only"),
        pytest.param("", "kube-scheduler", "x", "go together", id="empty-name"),
        pytest.param("topo", "s --k {kubecfg}", "x", "bad placeholder", id="unknown-placeholder"),
        pytest.param("topo", "s", "(", "--scheduler-reason", id="bad-regex"),
    ],
)
def test_bad_options_are_usage_errors(
    name: str | None, command: str | None, reason: str, complaint: str
) -> None:
    with pytest.raises(pytest.UsageError, match=complaint):
        from_options(name=name, command=command, reason=reason)


def test_reference_modes_differ_only_in_trusting_nrt() -> None:
    base = RECONSTRUCTION.argv(kubeconfig=Path("/k"), node_selector="s", workdir=Path("/w"))
    stale = STALE_NRT.argv(kubeconfig=Path("/k"), node_selector="s", workdir=Path("/w"))
    assert stale[: len(base)] == [
        a if a != "numa-reference" else "numa-reference-stale" for a in base
    ]
    assert stale[len(base) :] == ["--args", "/w/stale-nrt.yaml"]
    assert STALE_NRT.files == {"stale-nrt.yaml": "reconstructAvailable: false\n"}
    assert STALE_NRT.trusts_stale_nrt and not RECONSTRUCTION.trusts_stale_nrt
