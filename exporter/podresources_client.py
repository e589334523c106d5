"""Client of the kubelet podresources API (v1) over its unix socket: grpcio and the
committed generated stubs (``protos/podresources/v1``); the answers become the frozen
values of ``exporter.resources`` in ``exporter.podresources_proto``. The socket, the
deadline, the receive limit and the channel's arguments are
``exporter.podresources_settings``' (which also sets gRPC's core up for one small call a
second, before grpc is imported: ``configure_grpc_core``).

Every call carries a deadline (default 10 s) and answers are accepted up to 16 MiB (the
kubelet's own clients use the same limit; gRPC's default, 4 MiB, is a few hundred pods).
A failure raises a :class:`PodResourcesError` subclass chosen by gRPC status code, whose
message names the socket and what to check.

The kubelet recreates its socket when it restarts. Before each call the client looks at
the socket file: a new file (another inode) gets a new channel, and so does the call
after one that failed with UNAVAILABLE, so a restarted kubelet is reached at the next
call instead of after grpc's reconnect backoff (up to two minutes). ``generation`` counts
the channels: a new one may be a new kubelet, whose allocatable resources are read again.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import grpc

from exporter.podresources_proto import (
    WireError,
    allocatable_resources,
    decode_list,
    pod_resources,
)
from exporter.podresources_settings import (
    CHANNEL_OPTIONS,
    DEFAULT_SOCKET,
    DEFAULT_TIMEOUT_S,
    MAX_RECEIVE_BYTES,
)
from exporter.resources import AllocatableResources, PodResources
from protos.podresources.v1 import api_pb2, api_pb2_grpc

LIST, GET_ALLOCATABLE, GET = "List", "GetAllocatableResources", "Get"
_SERVICE = api_pb2.DESCRIPTOR.services_by_name["PodResourcesLister"]
_LIST_PATH = f"/{_SERVICE.full_name}/{_SERVICE.methods_by_name[LIST].name}"
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


class PodResourcesTooLarge(PodResourcesError):
    """The answer is larger than the receive limit."""


#: What a user can check, by method, when the kubelet does not serve it.
_UNIMPLEMENTED_HINT = {
    GET: "Get is served from Kubernetes 1.34 (beta, feature gate KubeletPodResourcesGet)",
    GET_ALLOCATABLE: "GetAllocatableResources is served from Kubernetes 1.23 (feature gate "
    "KubeletPodResourcesGetAllocatable); without it memory groups are judged from the "
    "reported blocks alone",
    LIST: "is this socket the kubelet's podresources socket?",
}


def _explain(method: str, code: grpc.StatusCode, detail: str, socket: Path) -> str:
    """A one-line message saying what failed and what to check."""
    if code is grpc.StatusCode.UNAVAILABLE:
        try:
            mode = os.stat(socket).st_mode
        except FileNotFoundError:
            return (
                f"socket {socket} does not exist: the kubelet is not running, or its "
                "pod-resources directory is not mounted there"
            )
        except OSError as exc:
            return f"cannot look at socket {socket}: {exc.strerror}"
        if not stat.S_ISSOCK(mode):
            return f"{socket} is not a unix socket: give the kubelet's pod-resources kubelet.sock"
        if "ermission denied" in detail:
            return (
                f"no permission to connect to {socket}: run as the socket's owner or make "
                "it group-accessible (docs/exporter.md, Security choices)"
            )
        return f"the kubelet is not answering on {socket} ({detail})"
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return f"no answer from {socket} within the deadline ({detail})"
    if code is grpc.StatusCode.UNIMPLEMENTED:
        return f"the kubelet on {socket} does not serve {method}: {_UNIMPLEMENTED_HINT[method]}"
    if code is grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in detail:
        return f"the answer from {socket} is larger than the limit ({detail})"
    if code is grpc.StatusCode.RESOURCE_EXHAUSTED:
        return f"the kubelet's rate limit refused the call on {socket} ({detail})"
    return f"{detail} (socket {socket})"


def _error_class(code: grpc.StatusCode, detail: str) -> type[PodResourcesError]:
    if code is grpc.StatusCode.RESOURCE_EXHAUSTED:
        return PodResourcesTooLarge if "larger than max" in detail else PodResourcesRateLimited
    return {
        grpc.StatusCode.UNAVAILABLE: PodResourcesUnavailable,
        grpc.StatusCode.DEADLINE_EXCEEDED: PodResourcesTimeout,
        grpc.StatusCode.UNIMPLEMENTED: PodResourcesUnimplemented,
    }.get(code, PodResourcesError)


def _socket_identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_ctime_ns


class _Channel:
    """One grpc channel to the socket and the calls made on it."""

    def __init__(self, socket_path: Path, max_receive_bytes: int) -> None:
        self.identity = _socket_identity(socket_path)
        self.channel = grpc.insecure_channel(
            f"unix://{socket_path.absolute()}",
            options=[
                ("grpc.max_receive_message_length", max_receive_bytes),
                # a new channel starts afresh: no connection (or its backoff) shared with
                # the channel it replaces through grpc's global subchannel pool
                ("grpc.use_local_subchannel_pool", 1),
                *CHANNEL_OPTIONS,
            ],
        )
        stub = api_pb2_grpc.PodResourcesListerStub(self.channel)
        self.get_allocatable = stub.GetAllocatableResources
        self.get = stub.Get
        # List answers stay encoded: an unchanged answer is recognised by its bytes
        self.list_raw = self.channel.unary_unary(
            _LIST_PATH,
            request_serializer=api_pb2.ListPodResourcesRequest.SerializeToString,
            response_deserializer=None,
        )


class PodResourcesClient:
    """A podresources client bound to one socket path. Thread-safe.

    ``on_error(method, code)`` is called for every failed call (the metrics hook).
    """

    def __init__(
        self,
        socket_path: Path = DEFAULT_SOCKET,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_receive_bytes: int = MAX_RECEIVE_BYTES,
        on_error: Callable[[str, str], None] | None = None,
    ) -> None:
        self.socket_path = Path(socket_path)
        self.timeout_s = timeout_s
        self.max_receive_bytes = max_receive_bytes
        self._on_error = on_error
        self._lock = threading.Lock()
        self._channel: _Channel | None = None
        self._generation = 0

    @property
    def generation(self) -> int:
        """Incremented whenever a new channel is made: a new kubelet may have changed
        what GetAllocatableResources returns."""
        return self._generation

    def _current(self) -> _Channel:
        with self._lock:
            current = self._channel
            if current is None or current.identity != _socket_identity(self.socket_path):
                if current is not None:
                    current.channel.close()
                current = self._channel = _Channel(self.socket_path, self.max_receive_bytes)
                self._generation += 1
            return current

    def _drop(self, channel: _Channel) -> None:
        with self._lock:
            if self._channel is channel:
                self._channel = None
        channel.channel.close()

    def _fail(self, method: str, code: str, detail: str) -> PodResourcesError:
        if self._on_error is not None:
            self._on_error(method, code)
        return PodResourcesError(method, code, detail)

    def _call(self, method: str, call: Callable[[_Channel], _T]) -> _T:
        channel = self._current()
        try:
            return call(channel)
        except grpc.RpcError as exc:
            code: grpc.StatusCode = exc.code()
            detail: str = exc.details() or ""
            if code is grpc.StatusCode.UNAVAILABLE:
                self._drop(channel)  # the next call connects afresh
            if self._on_error is not None:
                self._on_error(method, code.name)
            error = _error_class(code, detail)
            raise error(
                method, code.name, _explain(method, code, detail, self.socket_path)
            ) from exc

    def list_raw(self) -> bytes:
        """The encoded ``ListPodResourcesResponse``: equal bytes, equal answer."""
        request = api_pb2.ListPodResourcesRequest()
        raw: bytes = self._call(LIST, lambda c: c.list_raw(request, timeout=self.timeout_s))
        return raw

    def list(self) -> tuple[PodResources, ...]:
        """Every pod the kubelet runs, with what each container holds exclusively."""
        raw = self.list_raw()
        try:
            return decode_list(raw)
        except WireError as exc:
            raise self._fail(LIST, "INTERNAL", f"undecodable answer: {exc}") from exc

    def allocatable(self) -> AllocatableResources:
        """The node's allocatable exclusive resources (CPUs, devices, memory blocks)."""
        request = api_pb2.AllocatableResourcesRequest()
        answer = self._call(
            GET_ALLOCATABLE, lambda c: c.get_allocatable(request, timeout=self.timeout_s)
        )
        return allocatable_resources(answer)

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
        request = api_pb2.GetPodResourcesRequest(pod_name=name, pod_namespace=namespace)
        answer = self._call(GET, lambda c: c.get(request, timeout=self.timeout_s))
        return pod_resources(answer.pod_resources)

    def close(self) -> None:
        with self._lock:
            channel, self._channel = self._channel, None
        if channel is not None:
            channel.channel.close()
