"""Run a Controller in a thread against the real API server, and poll for outcomes."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import NotFound
from fakenrt.controller.runner import Controller, RunOptions
from fakenrt.controller.settings import ControllerSettings
from fakenrt.controller.writers import nrt_path
from fakenrt.profiles import NodeProfile

T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], *, timeout: float = 30.0, what: str = "") -> T:
    """Poll ``probe`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except NotFound:
            last = None
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or probe}; last={last!r}")


@contextmanager
def running(
    kube: KubeClient,
    profiles: Sequence[NodeProfile],
    *,
    clock: Callable[[], float] = time.time,
    state_dir: Path | None = None,
    **settings: Any,
) -> Iterator[Controller]:
    settings.setdefault("controller", "fakenrt-test")
    ctl = Controller(
        kube,
        profiles,
        ControllerSettings(**settings),
        RunOptions(state_dir=state_dir, workers=4),
        clock=clock,
    )
    ctl.start()
    ctl.run_in_thread()
    try:
        yield ctl
    finally:
        ctl.stop()


def get_pod(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    return kube.get(path("api", "v1", "namespaces", namespace, "pods", name))


def create_pod(kube: KubeClient, manifest: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in manifest.items() if k != "status"}
    meta = {k: v for k, v in body["metadata"].items() if k in ("name", "namespace", "annotations")}
    body["metadata"] = meta
    return kube.create(path("api", "v1", "namespaces", meta["namespace"], "pods"), body)


def phase_of(
    kube: KubeClient, namespace: str, name: str, phase: str
) -> Callable[[], dict[str, Any] | None]:
    def probe() -> dict[str, Any] | None:
        pod = get_pod(kube, namespace, name)
        return pod if (pod.get("status") or {}).get("phase") == phase else None

    return probe


def get_nrt(kube: KubeClient, node: str) -> dict[str, Any]:
    return kube.get(nrt_path(node))


def available(nrt: dict[str, Any]) -> dict[str, dict[str, int]]:
    """zone name -> resource -> available."""
    return {
        z["name"]: {r["name"]: int(r["available"]) for r in z.get("resources") or []}
        for z in nrt["zones"]
    }
