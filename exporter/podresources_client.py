"""Client of the kubelet podresources API (v1) over its unix socket.

The calls go through ``exporter.grpc_unix`` (gRPC over HTTP/2 with the standard library:
no grpcio, no protobuf runtime) and the answers are decoded by
``exporter.podresources_wire`` into the frozen values of ``exporter.resources``. Every
call carries a deadline (default 10 s) and answers are accepted up to 16 MiB, like
established clients. Failures are :class:`PodResourcesError` subclasses by gRPC status.

The kubelet recreates its socket when it restarts. The client notices a new socket (its
inode changes) or a failed call and connects again for the next call, so it recovers by
itself without a reconnect backoff.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from exporter.grpc_unix import CallError, UnaryChannel
from exporter.podresources_wire import (
    WireError,
    decode_allocatable,
    decode_get,
    decode_list,
    encode_get_request,
)
from exporter.resources import AllocatableResources, PodResources

DEFAULT_SOCKET = Path("/var/lib/kubelet/pod-resources/kubelet.sock")
DEFAULT_TIMEOUT_S = 10.0
MAX_RECEIVE_BYTES = 16 * 1024 * 1024

LIST, GET_ALLOCATABLE, GET = "List", "GetAllocatableResources", "Get"
SERVICE = "/v1.PodResourcesLister/"


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


_BY_CODE: dict[str, type[PodResourcesError]] = {
    "UNAVAILABLE": PodResourcesUnavailable,
    "DEADLINE_EXCEEDED": PodResourcesTimeout,
    "UNIMPLEMENTED": PodResourcesUnimplemented,
    "RESOURCE_EXHAUSTED": PodResourcesRateLimited,
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
        self._channel = UnaryChannel(self.socket_path, max_receive_bytes=MAX_RECEIVE_BYTES)

    @property
    def generation(self) -> int:
        """Incremented whenever a new connection is made: a new kubelet may have changed
        what GetAllocatableResources returns."""
        return self._channel.connections

    def _fail(self, method: str, code: str, detail: str) -> PodResourcesError:
        if self._on_error is not None:
            self._on_error(method, code)
        error = _BY_CODE.get(code, PodResourcesError)
        return error(method, code, f"{detail} (socket {self.socket_path})")

    def _call(self, method: str, request: bytes = b"") -> bytes:
        try:
            return self._channel.call(SERVICE + method, request, timeout_s=self.timeout_s)
        except CallError as exc:
            raise self._fail(method, exc.code, exc.detail) from exc

    def list_raw(self) -> bytes:
        """The encoded ``ListPodResourcesResponse``: equal bytes, equal answer."""
        return self._call(LIST)

    def list(self) -> tuple[PodResources, ...]:
        """Every pod the kubelet runs, with what each container holds exclusively."""
        raw = self.list_raw()
        try:
            return decode_list(raw)
        except WireError as exc:
            raise self._fail(LIST, "INTERNAL", f"undecodable answer: {exc}") from exc

    def allocatable(self) -> AllocatableResources:
        """The node's allocatable exclusive resources (CPUs, devices, memory blocks)."""
        raw = self._call(GET_ALLOCATABLE)
        try:
            return decode_allocatable(raw)
        except WireError as exc:
            raise self._fail(GET_ALLOCATABLE, "INTERNAL", f"undecodable answer: {exc}") from exc

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
        raw = self._call(GET, encode_get_request(namespace, name))
        try:
            return decode_get(raw)
        except WireError as exc:
            raise self._fail(GET, "INTERNAL", f"undecodable answer: {exc}") from exc

    def close(self) -> None:
        self._channel.close()
