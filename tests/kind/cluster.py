"""A real Kind cluster for tests, brought up and torn down by the kind/ scripts.

``kind_cluster()`` runs ``kind/up.sh`` (Docker engine, offline node image, ``kind create
cluster`` from ``kind/cluster.yaml``, waits for the node, the default ServiceAccount and
the kubelet's podresources socket, loads the project image) and yields a
:class:`KindCluster` with the kubeconfig path; on exit - also when bringing it up failed
half-way - it runs ``kind/down.sh``. The scripts' progress lines go to stderr as they
happen (pass ``progress=None`` to capture them into the error message instead).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

REPO_ROOT = Path(__file__).resolve().parents[2]
KIND_DIR = REPO_ROOT / "kind"
DEFAULT_NAME = "numa-testkit"
KUBECTL_TIMEOUT_S = 120.0


class KindError(RuntimeError):
    """A kind/ script or a command against the cluster failed; the message says which."""


@dataclass(frozen=True)
class KindCluster:
    """A running Kind cluster: its name, kubeconfig, a matching kubectl and node container."""

    name: str
    kubeconfig: Path
    kubectl: Path

    @property
    def node(self) -> str:
        """The Docker container (and Kubernetes Node) name of the control-plane node."""
        return f"{self.name}-control-plane"

    def kubectl_run(
        self, *args: str, stdin: str | None = None, timeout: float = KUBECTL_TIMEOUT_S
    ) -> str:
        """Runs kubectl against the cluster; returns stdout, raises KindError on failure."""
        return _run(
            [str(self.kubectl), "--kubeconfig", str(self.kubeconfig), *args], stdin, timeout
        )

    def kubectl_json(self, *args: str) -> Any:
        """``kubectl get ... -o json``, parsed."""
        return json.loads(self.kubectl_run("get", *args, "-o", "json"))

    def node_exec(self, *command: str, timeout: float = KUBECTL_TIMEOUT_S) -> str:
        """Runs a command inside the node container (``docker exec``); returns stdout."""
        return _run(["docker", "exec", self.node, *command], None, timeout)


def _run(argv: Sequence[str], stdin: str | None, timeout: float) -> str:
    try:
        proc = subprocess.run(
            list(argv), input=stdin, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise KindError(f"{' '.join(argv[:4])} ...: no answer within {timeout:.0f} s") from exc
    if proc.returncode != 0:
        raise KindError(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc.stdout


def _script(name: str, args: Sequence[str], env_name: str, progress: IO[str] | None) -> str:
    """Runs kind/<name> for cluster env_name; returns its stdout's last line."""
    env = {"NUMA_TESTKIT_KIND_CLUSTER": env_name}
    proc = subprocess.run(
        [str(KIND_DIR / name), *args],
        stdout=subprocess.PIPE,
        stderr=progress if progress is not None else subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
        check=False,
    )
    if proc.returncode != 0:
        detail = "" if progress is not None else "\n" + (proc.stderr or "")[-4000:]
        raise KindError(f"kind/{name} failed (exit {proc.returncode}){detail}")
    lines = proc.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def _lib_value(variable: str) -> str:
    """A variable kind/lib.sh computes (e.g. K8S_BIN_DIR), so paths have one source."""
    out = _run(["bash", "-c", f'source "{KIND_DIR}/lib.sh" && echo "${variable}"'], None, 30.0)
    return out.strip()


def kind_up(
    *, name: str = DEFAULT_NAME, load_image: bool = True, progress: IO[str] | None = None
) -> KindCluster:
    """Brings the cluster up with kind/up.sh (reusing one that runs the current node image)."""
    args = [] if load_image else ["--no-image"]
    kubeconfig = Path(_script("up.sh", args, name, progress))
    if not kubeconfig.is_file():
        raise KindError(f"kind/up.sh printed {str(kubeconfig)!r}, which is not a kubeconfig file")
    kubectl = Path(_lib_value("K8S_BIN_DIR")) / "kubectl"
    return KindCluster(name=name, kubeconfig=kubeconfig, kubectl=kubectl)


def kind_down(*, name: str = DEFAULT_NAME, progress: IO[str] | None = None) -> None:
    """Deletes the cluster with kind/down.sh (a no-op when it does not exist)."""
    _script("down.sh", [], name, progress)


@contextlib.contextmanager
def kind_cluster(
    *, name: str = DEFAULT_NAME, load_image: bool = True, progress: IO[str] | None = None
) -> Iterator[KindCluster]:
    """A cluster for the duration of the block; always deleted afterwards."""
    try:
        yield kind_up(name=name, load_image=load_image, progress=progress)
    finally:
        kind_down(name=name, progress=progress)
