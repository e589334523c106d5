"""``numa-exporter observe`` and the option checks of ``numa-exporter run``."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client

from exporter import kubetoken
from exporter.annotations import OBSERVED_MEMORY_GROUPS, OBSERVED_PLACEMENT
from exporter.cli import cli
from exporter.resources import AllocatableResources, MemoryBlock
from tests.controlplane.cluster import ControlPlane
from tests.exporter import scenarios as s
from tests.exporter.fake_podresources import FakePodResources
from tests.exporter.kube_helpers import GUARANTEED, create_pod, wait_until

REPO = Path(__file__).resolve().parents[2]


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


def _kubeconfig(tmp_path: Path, cp: ControlPlane, user: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        f"clusters: [{{name: c, cluster: {{server: '{cp.server}', "
        f"certificate-authority: '{cp.ca_file}'}}}}]\n"
        f"users: [{{name: u, user: {user}}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
    )
    return path


ENDLESS_PLUGIN = "{exec: {command: python3, args: [-c, 'while 1: print(8 * 65536 * \"x\")']}}"


@pytest.mark.parametrize(
    ("content", "user", "problem"),
    [
        pytest.param(None, "", "kubeconfig: /dev/zero is not a regular file", id="dev-zero"),
        pytest.param(b"a: \xff\n", "", "is not UTF-8 text (invalid byte at offset 3)", id="utf8"),
        pytest.param(b"a: [\n", "", "not a YAML kubeconfig (while parsing a flow node", id="yaml"),
        pytest.param(b"- 1\n", "", "not a kubeconfig mapping", id="not-a-mapping"),
        pytest.param(b" " * (5 << 20), "", "is larger than 4 MiB, the most read", id="huge"),
        pytest.param(
            b"", "{tokenFile: /dev/zero}", "users['u'].tokenFile: /dev/zero is not a regular file",
            id="token-file-dev-zero",
        ),
        pytest.param(
            b"", ENDLESS_PLUGIN, "exec plugin python3: printed more than 1048576 bytes; stopped",
            id="exec-endless",
        ),
        pytest.param(
            b"", "{exec: {command: python3, args: [-c, 'import time; time.sleep(600)']}}",
            "exec plugin python3: did not finish within 1 s; stopped", id="exec-hangs",
        ),
        pytest.param(
            b"", "{exec: {command: python3, args: [-c, 'print(42)']}}",
            "exec plugin python3: its output is not an ExecCredential", id="exec-not-a-mapping",
        ),
        pytest.param(
            b"", "{exec: {command: python3, args: [-c, 'print(\"garbage\")']}}",
            "exec plugin python3: exec: failed to decode process output", id="exec-garbage",
        ),
    ],
)  # fmt: skip
def test_observe_refuses_an_unusable_kubeconfig_in_one_line(
    *,
    _observe: Callable[..., tuple[int, str, str]],
    fake_kubelet: FakePodResources,
    sysfs_root: Path,
    control_plane: ControlPlane,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    content: bytes | None,
    user: str,
    problem: str,
) -> None:
    if "time.sleep" in user:  # the hanging plugin: stopped after 1 s, not the default 30
        monkeypatch.setattr(kubetoken, "EXEC_TIMEOUT_S", 1.0)
    kubeconfig = Path("/dev/zero")
    if user:
        kubeconfig = _kubeconfig(tmp_path, control_plane, user)
    elif content is not None:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_bytes(content)
    code, out, err = _observe(
        "--podresources-socket", str(fake_kubelet.socket_path),
        "--sysfs-root", str(sysfs_root), "--kubeconfig", str(kubeconfig), "--json",
    )  # fmt: skip
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("Error: ")
    assert problem in err


def _rss_kib(pid: int, field: str) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split(f"{field}:", 1)[1].split()[0])


def test_run_logs_an_endless_exec_plugin_once_and_retries_without_growing(
    control_plane: ControlPlane,
    fake_kubelet: FakePodResources,
    sysfs_root: Path,
    tmp_path: Path,
) -> None:
    """The plugin that printed 3 GB grew the daemon to MemoryError (3.8 GB, a traceback
    per retry): now each run is cut at 1 MiB, the daemon logs one line for the outage
    (per list/watch loop), serves on and runs the plugin again later, and stays small."""
    runs = tmp_path / "runs"
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import pathlib, sys\n"
        f"runs = pathlib.Path({str(runs)!r})\n"
        "runs.write_text(str(int(runs.read_text()) + 1 if runs.exists() else 1))\n"
        "block = b'x' * 65536\n"
        "for _ in range(3 * 1024 * 1024 * 1024 // 65536):\n"
        "    sys.stdout.buffer.write(block)\n"
    )
    kubeconfig = _kubeconfig(
        tmp_path, control_plane, f"{{exec: {{command: {sys.executable}, args: [{plugin}]}}}}"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", "from exporter.cli import main; main()", "run", "--node-name", "n",
         "--podresources-socket", str(fake_kubelet.socket_path),
         "--sysfs-root", str(sysfs_root), "--kubeconfig", str(kubeconfig),
         "--metrics-bind-address", "127.0.0.1:0"],
        stderr=subprocess.PIPE, text=True, cwd=REPO,
    )  # fmt: skip
    try:
        wait_until(
            lambda: (runs.exists() and int(runs.read_text() or 0) >= 3) or proc.poll() is not None,
            timeout_s=60,
            what="the plugin run three times",
        )
        assert proc.poll() is None  # serving on
        peak_mib = _rss_kib(proc.pid, "VmHWM") / 1024
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=30)
    assert peak_mib < 150, peak_mib
    failures = [json.loads(line) for line in stderr.splitlines() if "printed more than" in line]
    # one line for the outage from each list/watch loop (the node's pods, its ResourceSlices)
    assert sorted(f["logger"] for f in failures) == [
        "exporter.pod_cache",
        "exporter.slice_cache",
    ], stderr[-3000:]
    assert {f["level"] for f in failures} == {"warning"}
    assert "Traceback" not in stderr


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param(None, "kubeconfig: /dev/zero is not a regular file", id="dev-zero"),
        pytest.param(b"a: \xff\n", "is not UTF-8 text (invalid byte at offset 3)", id="utf8"),
        pytest.param(b"a: [\n", "not a YAML kubeconfig", id="yaml"),
    ],
)
def test_run_refuses_an_unusable_kubeconfig_at_start_in_one_line(
    run_cli: Callable[..., tuple[int, str, str]],
    sysfs_root: Path,
    tmp_path: Path,
    content: bytes | None,
    problem: str,
) -> None:
    kubeconfig = Path("/dev/zero")
    if content is not None:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_bytes(content)
    code, _, err = run_cli(
        "run", "--sysfs-root", str(sysfs_root), "--kubeconfig", str(kubeconfig),
        "--metrics-bind-address", "127.0.0.1:0", env={"NODE_NAME": "n"},
    )  # fmt: skip
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("Error: ")
    assert problem in err
