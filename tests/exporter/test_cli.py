"""``numa-exporter observe`` and the option checks of ``numa-exporter run``."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client

from exporter.annotations import OBSERVED_MEMORY_GROUPS, OBSERVED_PLACEMENT
from exporter.cli import cli
from exporter.resources import AllocatableResources, MemoryBlock
from tests.controlplane.cluster import ControlPlane
from tests.exporter import scenarios as s
from tests.exporter.fake_podresources import FakePodResources
from tests.exporter.kube_helpers import GUARANTEED, create_pod


def _invoke(args: list[str]) -> int:
    """The command line's exit status (usage errors exit through SystemExit)."""
    try:
        return cli(args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1


@pytest.fixture
def run_cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[int, str, str]]:
    """``numa-exporter <args>`` in this process, with ``env`` added to the environment
    (NODE_NAME removed first): (exit status, stdout, stderr)."""

    def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        monkeypatch.delenv("NODE_NAME", raising=False)
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        capsys.readouterr()
        code = _invoke(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


@pytest.fixture
def _observe(run_cli: Callable[..., tuple[int, str, str]]) -> Callable[..., tuple[int, str, str]]:
    return lambda *args: run_cli("observe", *args)


def test_observe_without_api_server(
    _observe: Callable[..., tuple[int, str, str]], fake_kubelet: FakePodResources, sysfs_root: Path
) -> None:
    fake_kubelet.set_pods([s.CPU_ONLY, s.MULTI_NUMA_GROUP, s.NO_TOPOLOGY_DEVICE])
    code, out, err = _observe(
        "--podresources-socket", str(fake_kubelet.socket_path),
        "--sysfs-root", str(sysfs_root), "--json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out) == {
        "default/cpu-only": {
            OBSERVED_PLACEMENT: '[{"zone":"node-0","amount":{"cpu":"4"}}]',
            OBSERVED_MEMORY_GROUPS: "[]",
        },
        "default/group": {
            OBSERVED_PLACEMENT: '[{"zone":"node-0","amount":{"cpu":"1"}},'
            '{"zone":"node-1","amount":{"memory":"1073741824"}}]',
            OBSERVED_MEMORY_GROUPS: '[{"memoryNodes":["node-0","node-1"],'
            '"amount":{"memory":"10737418240"}},'
            '{"memoryNodes":["node-1"],"amount":{"memory":"1073741824"}}]',
        },
        "default/no-topology": {OBSERVED_MEMORY_GROUPS: "[]"},
    }


@pytest.mark.parametrize("get_implemented", [True, False], ids=["get", "get-unimplemented"])
def test_observe_one_pod(
    _observe: Callable[..., tuple[int, str, str]],
    fake_kubelet: FakePodResources,
    sysfs_root: Path,
    get_implemented: bool,
) -> None:
    fake_kubelet.set_pods([s.CPU_ONLY, s.GPU_AND_CPU])
    fake_kubelet.get_implemented = get_implemented
    code, out, err = _observe(
        "--podresources-socket", str(fake_kubelet.socket_path),
        "--sysfs-root", str(sysfs_root), "--pod", "default/gpu-cpu", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert list(json.loads(out)) == ["default/gpu-cpu"]
    assert fake_kubelet.calls["Get"] == 1
    assert fake_kubelet.calls["List"] == (0 if get_implemented else 1)


@pytest.mark.controlplane
def test_observe_with_kubeconfig_judges_completeness_from_the_pod_spec(
    _observe: Callable[..., tuple[int, str, str]],
    control_plane: ControlPlane,
    api_client: client.ApiClient,
    namespace: str,
    fake_kubelet: FakePodResources,
    sysfs_root: Path,
) -> None:
    fake_kubelet.allocatable = AllocatableResources(memory=(MemoryBlock("memory", 1, (0,)),))
    create_pod(api_client, namespace, "cpu-only", node="n1", containers={"main": GUARANTEED})
    fake_kubelet.set_pods([s.pod("cpu-only", *s.CPU_ONLY.containers, namespace=namespace)])
    code, out, err = _observe(
        "--podresources-socket", str(fake_kubelet.socket_path),
        "--sysfs-root", str(sysfs_root), "--kubeconfig", str(control_plane.kubeconfig),
        "--node-name", "n1", "--json",
    )  # fmt: skip
    assert code == 0, err
    # Guaranteed, static Memory Manager, no blocks reported for "main": incomplete
    assert json.loads(out)[f"{namespace}/cpu-only"][OBSERVED_MEMORY_GROUPS] == "null"


def test_observe_leaves_out_pods_the_kubelet_lists_twice(
    _observe: Callable[..., tuple[int, str, str]], fake_kubelet: FakePodResources, sysfs_root: Path
) -> None:
    # an old and a new pod under one name: the daemon writes neither, observe shows neither
    old = s.pod("cpu-only", *s.GPU_AND_CPU.containers)
    fake_kubelet.set_pods([s.CPU_ONLY, old, s.SHARED_POOL])
    code, out, err = _observe(
        "--podresources-socket", str(fake_kubelet.socket_path),
        "--sysfs-root", str(sysfs_root), "--json",
    )  # fmt: skip
    assert code == 0, err
    assert list(json.loads(out)) == ["default/shared"]


@pytest.mark.controlplane
def test_observe_with_kubeconfig_shows_only_pods_the_daemon_would_write(
    _observe: Callable[..., tuple[int, str, str]],
    control_plane: ControlPlane,
    api_client: client.ApiClient,
    namespace: str,
    fake_kubelet: FakePodResources,
    sysfs_root: Path,
) -> None:
    for name, phase, started in (
        ("running", "Running", True),
        ("acknowledged", "Pending", True),
        ("not-admitted", "Pending", False),
        ("succeeded", "Succeeded", True),
    ):
        create_pod(api_client, namespace, name, node="n1", phase=phase, started=started)
    names = ("running", "acknowledged", "not-admitted", "succeeded")
    fake_kubelet.set_pods([s.pod(n, *s.CPU_ONLY.containers, namespace=namespace) for n in names])
    code, out, err = _observe(
        "--podresources-socket", str(fake_kubelet.socket_path),
        "--sysfs-root", str(sysfs_root), "--kubeconfig", str(control_plane.kubeconfig),
        "--node-name", "n1", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert sorted(json.loads(out)) == [f"{namespace}/acknowledged", f"{namespace}/running"]


@pytest.mark.controlplane
def test_observe_with_kubeconfig_copes_with_allocatable_unimplemented(
    _observe: Callable[..., tuple[int, str, str]],
    control_plane: ControlPlane,
    api_client: client.ApiClient,
    namespace: str,
    fake_kubelet: FakePodResources,
    sysfs_root: Path,
) -> None:
    # a kubelet without GetAllocatableResources has no Memory Manager view: like the
    # daemon, observe judges the groups from the reported blocks alone
    fake_kubelet.allocatable_implemented = False
    create_pod(api_client, namespace, "cpu-only", node="n1", containers={"main": GUARANTEED})
    fake_kubelet.set_pods([s.pod("cpu-only", *s.CPU_ONLY.containers, namespace=namespace)])
    code, out, err = _observe(
        "--podresources-socket", str(fake_kubelet.socket_path),
        "--sysfs-root", str(sysfs_root), "--kubeconfig", str(control_plane.kubeconfig),
        "--node-name", "n1", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)[f"{namespace}/cpu-only"][OBSERVED_MEMORY_GROUPS] == "[]"


@pytest.mark.parametrize(
    "args,message",
    [
        pytest.param(["--sysfs-root", "/nonexistent"], "cannot list NUMA nodes", id="bad-sysfs"),
        pytest.param(["--pod", "nameonly"], "expected NAMESPACE/NAME", id="bad-pod"),
    ],
)
def test_observe_errors(
    _observe: Callable[..., tuple[int, str, str]],
    fake_kubelet: FakePodResources,
    sysfs_root: Path,
    args: list[str],
    message: str,
) -> None:
    code, _, err = _observe(
        "--podresources-socket", str(fake_kubelet.socket_path),
        "--sysfs-root", str(sysfs_root), *args, "--json",
    )  # fmt: skip
    assert code != 0
    assert message in err


def test_observe_socket_absent(
    _observe: Callable[..., tuple[int, str, str]], short_dir: Path, sysfs_root: Path
) -> None:
    code, _, err = _observe(
        "--podresources-socket", str(short_dir / "none.sock"),
        "--sysfs-root", str(sysfs_root), "--rpc-timeout", "1", "--json",
    )  # fmt: skip
    assert code == 1
    assert "podresources List failed: UNAVAILABLE" in err


@pytest.mark.parametrize(
    "args,env,message",
    [
        pytest.param(
            [], {}, "the following arguments are required: --node-name", id="node-name-required"
        ),
        pytest.param(
            ["--metrics-bind-address", "8080"], {"NODE_NAME": "n"}, "not host:port", id="bad-bind"
        ),
        pytest.param(
            ["--poll-interval", "0"], {"NODE_NAME": "n"}, "--poll-interval", id="bad-interval"
        ),
    ],
)
def test_run_option_errors(
    run_cli: Callable[..., tuple[int, str, str]], args: list[str], env: dict[str, str], message: str
) -> None:
    code, _, err = run_cli("run", *args, env=env)
    assert code == 2
    assert message in err


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """``run`` configures the exporter's JSON logging on the runner's stderr: undo it."""
    logger = logging.getLogger("exporter")
    state = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:], logger.level, logger.propagate = state[0], state[1], state[2]


@pytest.mark.usefixtures("restore_logging")
def test_run_bad_sysfs_exits_with_the_file(
    run_cli: Callable[..., tuple[int, str, str]], tmp_path: Path, control_plane: ControlPlane
) -> None:
    code, _, err = run_cli(
        "run", "--sysfs-root", str(tmp_path), "--kubeconfig", str(control_plane.kubeconfig),
        "--metrics-bind-address", "127.0.0.1:0", env={"NODE_NAME": "n"},
    )  # fmt: skip
    assert code == 1
    assert f"Error: --sysfs-root (SYSFS_ROOT): {tmp_path}/devices/system/node: cannot list" in err
