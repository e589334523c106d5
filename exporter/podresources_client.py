"""gRPC client of the kubelet podresources API (v1) over its unix socket.

The only exporter module that imports the generated code. Every call carries a deadline
(default 10 s) and the channel accepts messages up to 16 MiB, like established clients.
Responses are converted into the frozen values of ``exporter.resources``; ``grpc.RpcError``
is mapped by status code to :class:`PodResourcesError` subclasses.

The kubelet recreates its socket when it restarts. The client notices a new socket (its
inode changes) or a failed call (UNAVAILABLE) and builds a fresh channel for the next
call, so it recovers by itself instead of waiting out gRPC's reconnect backoff.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc

from exporter.podresources_convert import device_assignments, memory_blocks, pod_resources
from exporter.resources import AllocatableResources, PodResources
from protos.podresources.v1 import api_pb2, api_pb2_grpc

DEFAULT_SOCKET = Path("/var/lib/kubelet/pod-resources/kubelet.sock")
DEFAULT_TIMEOUT_S = 10.0
MAX_RECEIVE_BYTES = 16 * 1024 * 1024

LIST, GET_ALLOCATABLE, GET = "List", "GetAllocatableResources", "Get"

_T = TypeVar("_T")


class PodResourcesError(RuntimeError):
    """A podresources call failed. ``method`` and ``code`` (a gRPC status name) say how."""

    def __init__(self, method: str, code: str, detail: str) -> None:
        super().__init__(f"podresources {method} failed: {code}: {detail}")
        self.method = method
        self.code = code
        self.detail = detail


class PodResourcesUnavailable(PodResourcesError):
    """The socket is absent or the kubelet is not answering (restarting)."""


class PodResourcesTimeout(PodResourcesError):
    """The call exceeded its deadline."""


class PodResourcesUnimplemented(PodResourcesError):
    """The kubelet does not serve this method (``Get`` before it is enabled)."""


class PodResourcesRateLimited(PodResourcesError):
    """The kubelet's rate limiter refused the call."""


_BY_CODE: dict[grpc.StatusCode, type[PodResourcesError]] = {
    grpc.StatusCode.UNAVAILABLE: PodResourcesUnavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: PodResourcesTimeout,
    grpc.StatusCode.UNIMPLEMENTED: PodResourcesUnimplemented,
    grpc.StatusCode.RESOURCE_EXHAUSTED: PodResourcesRateLimited,
}


class PodResourcesClient:
    """A podresources client bound to one socket path. Thread-safe.

    ``on_error(method, code)`` is called for every failed call (the metrics hook).
    """

    def __init__(
        self,
        socket_path: Path = DEFAULT_SOCKET,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        on_error: Callable[[str, str], None] | None = None,
    ) -> None:
        self.socket_path = Path(socket_path)
        self.timeout_s = timeout_s
        self._on_error = on_error
        self._lock = threading.Lock()
        self._channel: grpc.Channel | None = None
        self._stub: Any = None
        self._inode: int | None = None
        #: Incremented whenever a new channel is built: a new kubelet may have changed
        #: what GetAllocatableResources returns.
        self.generation = 0

    def _socket_inode(self) -> int | None:
        try:
            return os.stat(self.socket_path).st_ino
        except OSError:
            return None

    def _ensure_stub(self) -> Any:
        inode = self._socket_inode()
        with self._lock:
            if self._channel is not None and inode != self._inode:
                self._channel.close()
                self._channel = None
            if self._channel is None:
                self._channel = grpc.insecure_channel(
                    f"unix://{self.socket_path}",
                    options=[
                        ("grpc.max_receive_message_length", MAX_RECEIVE_BYTES),
                        ("grpc.initial_reconnect_backoff_ms", 100),
                        ("grpc.max_reconnect_backoff_ms", 1000),
                    ],
                )
                self._stub = api_pb2_grpc.PodResourcesListerStub(self._channel)
                self._inode = inode
                self.generation += 1
            return self._stub

    def _reset(self) -> None:
        with self._lock:
            if self._channel is not None:
                self._channel.close()
            self._channel = None
            self._stub = None

    def _call(self, method: str, invoke: Callable[[Any], _T]) -> _T:
        stub = self._ensure_stub()
        try:
            return invoke(stub)
        except grpc.RpcError as exc:
            code = exc.code() if callable(getattr(exc, "code", None)) else None
            code_name = code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"
            detail = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
            if self._on_error is not None:
                self._on_error(method, code_name)
            if code == grpc.StatusCode.UNAVAILABLE:
                self._reset()
            error = _BY_CODE.get(code, PodResourcesError) if code else PodResourcesError
            raise error(method, code_name, f"{detail} (socket {self.socket_path})") from exc

    def list(self) -> tuple[PodResources, ...]:
        """Every pod the kubelet runs, with what each container holds exclusively."""
        response = self._call(
            LIST,
            lambda stub: stub.List(api_pb2.ListPodResourcesRequest(), timeout=self.timeout_s),
        )
        return tuple(pod_resources(p) for p in response.pod_resources)

    def allocatable(self) -> AllocatableResources:
        """The node's allocatable exclusive resources (CPUs, devices, memory blocks)."""
        response = self._call(
            GET_ALLOCATABLE,
            lambda stub: stub.GetAllocatableResources(
                api_pb2.AllocatableResourcesRequest(), timeout=self.timeout_s
            ),
        )
        return AllocatableResources(
            cpu_ids=tuple(response.cpu_ids),
            devices=device_assignments(response.devices),
            memory=memory_blocks(response.memory),
        )

    def allocatable_or_empty(self) -> AllocatableResources:
        """``allocatable()``, or nothing where the kubelet does not serve the call (before
        1.23, or with the feature off): no Memory Manager view, so memory groups are
        judged from the reported blocks alone."""
        try:
            return self.allocatable()
        except PodResourcesUnimplemented:
            return AllocatableResources()

    def get(self, namespace: str, name: str) -> PodResources:
        """One pod. Raises PodResourcesUnimplemented where the kubelet does not serve Get."""
        response = self._call(
            GET,
            lambda stub: stub.Get(
                api_pb2.GetPodResourcesRequest(pod_name=name, pod_namespace=namespace),
                timeout=self.timeout_s,
            ),
        )
        return pod_resources(response.pod_resources)

    def close(self) -> None:
        self._reset()
