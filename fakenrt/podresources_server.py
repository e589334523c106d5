"""A fake kubelet podresources server (API v1) on a unix socket, for nodes with no kubelet.

It serves exactly what a :class:`PodResourcesSource` reports - the node profile and what
every pod holds - so a real podresources client (the project's exporter, or any other)
runs unchanged against a fake node. The only fakenrt module that imports the generated
gRPC code; the messages themselves are built by :mod:`fakenrt.podresources_messages` (pure).

Answers mirror the kubelet (``pkg/kubelet/apis/podresources/server_v1.go``):

* ``List`` / ``Get``: per pod, its sidecars (restartable init containers) then its regular
  containers - never plain init containers. Per container: exclusive ``cpu_ids`` (sorted),
  one ``ContainerDevices`` entry *per device*, carrying the device's NUMA node from the
  profile or no topology for devices without NUMA affinity (as
  ``containerDevicesFromResourceDeviceInstances`` in ``pkg/kubelet/cm`` builds them), and
  the Memory Manager blocks with their NUMA node sets, and the prepared ResourceClaims
  the container uses (``dynamic_resources``: claim, driver, pool, device, CDI ids;
  see :mod:`fakenrt.kubelet.dra`) - without NUMA topology, as the kubelet reports them.
* ``GetAllocatableResources``: the static CPU manager's allocatable CPUs (all but
  ``reservedSystemCPUs``; none with the ``none`` policy), every healthy device, one entry
  each, and per NUMA node and memory type its allocatable size (none with the Memory
  Manager policy ``None``).
* ``Get`` of an unknown pod fails like the kubelet's: status UNKNOWN (a plain Go error)
  with ``pod <name> in namespace <namespace> not found``. ``get_mode`` makes ``Get``
  answer like a kubelet before 1.27 (UNIMPLEMENTED) or one with the ``KubeletPodResourcesGet``
  gate off (UNKNOWN, ``PodResources API Get method disabled``).
* Optional rate limit as the kubelet's (token bucket, default 100 QPS, burst 10):
  RESOURCE_EXHAUSTED ``rejected by rate limit``.

Like the kubelet, ``start`` removes a stale socket file and ``stop`` removes the socket, so
a restart creates a new socket (a new inode) at the same path.
"""

from __future__ import annotations

import stat
import threading
import time
from collections.abc import Callable, Sequence
from concurrent import futures
from pathlib import Path
from typing import Protocol

import grpc

from fakenrt.kubelet.allocation import PodAllocation
from fakenrt.podresources_messages import allocatable_message, pod_message
from fakenrt.podresources_report import DeviceNuma, device_numa
from fakenrt.profiles.model import NodeProfile
from protos.podresources.v1 import api_pb2, api_pb2_grpc

GET_SERVED = "served"
GET_UNIMPLEMENTED = "unimplemented"
GET_DISABLED = "disabled"
GET_MODES = (GET_SERVED, GET_UNIMPLEMENTED, GET_DISABLED)

#: The kubelet's podresources rate limit (``pkg/kubelet/apis/podresources/constants.go``).
DEFAULT_QPS = 100.0
DEFAULT_BURST = 10
#: sun_path holds 108 bytes including the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107


class PodResourcesSource(Protocol):
    """What a fake node's kubelet knows. Called from gRPC worker threads: must be safe to
    call concurrently and return a consistent pair.

    ``snapshot`` returns the node profile and every active pod, each with every container
    it reports (a container holding nothing exclusively has empty fields).
    """

    def snapshot(self) -> tuple[NodeProfile, Sequence[PodAllocation]]: ...


class PodResourcesServerError(RuntimeError):
    """The server cannot start (bad socket path, address in use, ...)."""


# --- rate limit ----------------------------------------------------------------------


class TokenBucket:
    """A token bucket like golang.org/x/time/rate: ``burst`` tokens, refilled at ``qps``."""

    def __init__(self, qps: float, burst: int, *, clock: Callable[[], float]) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("rate limit needs qps > 0 and burst >= 1")
        self._qps = qps
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self._lock = threading.Lock()

    def allow(self) -> bool:
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False


# --- service -------------------------------------------------------------------------


class _Servicer(api_pb2_grpc.PodResourcesListerServicer):
    def __init__(
        self, source: PodResourcesSource, get_mode: str, limiter: TokenBucket | None
    ) -> None:
        self._source = source
        self._get_mode = get_mode
        self._limiter = limiter
        self._cache_profile: NodeProfile | None = None
        self._cache_numa: DeviceNuma = {}
        self._lock = threading.Lock()

    def _limit(self, context: grpc.ServicerContext) -> None:
        if self._limiter is not None and not self._limiter.allow():
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "rejected by rate limit")

    def _numa_of(self, profile: NodeProfile) -> DeviceNuma:
        with self._lock:
            if self._cache_profile is not profile:
                self._cache_numa = device_numa(profile)
                self._cache_profile = profile
            return self._cache_numa

    def List(
        self, request: api_pb2.ListPodResourcesRequest, context: grpc.ServicerContext
    ) -> api_pb2.ListPodResourcesResponse:
        self._limit(context)
        profile, pods = self._source.snapshot()
        numa_of = self._numa_of(profile)
        return api_pb2.ListPodResourcesResponse(
            pod_resources=[pod_message(p, numa_of) for p in pods]
        )

    def GetAllocatableResources(
        self, request: api_pb2.AllocatableResourcesRequest, context: grpc.ServicerContext
    ) -> api_pb2.AllocatableResourcesResponse:
        self._limit(context)
        profile, _ = self._source.snapshot()
        return allocatable_message(profile)

    def Get(
        self, request: api_pb2.GetPodResourcesRequest, context: grpc.ServicerContext
    ) -> api_pb2.GetPodResourcesResponse:
        self._limit(context)
        if self._get_mode == GET_UNIMPLEMENTED:
            # what grpc-go answers for a method the service does not have
            context.abort(
                grpc.StatusCode.UNIMPLEMENTED,
                "unknown method Get for service v1.PodResourcesLister",
            )
        if self._get_mode == GET_DISABLED:
            context.abort(grpc.StatusCode.UNKNOWN, "PodResources API Get method disabled")
        profile, pods = self._source.snapshot()
        for pod in pods:
            if pod.namespace == request.pod_namespace and pod.name == request.pod_name:
                return api_pb2.GetPodResourcesResponse(
                    pod_resources=pod_message(pod, self._numa_of(profile))
                )
        context.abort(
            grpc.StatusCode.UNKNOWN,
            f"pod {request.pod_name} in namespace {request.pod_namespace} not found",
        )
        raise AssertionError("unreachable: abort raises")  # pragma: no cover


class PodResourcesServer:
    """A podresources server on ``socket_path``. Start, stop and restart it like a kubelet.

    ``thread_pool`` lets many servers (one per fake node) share worker threads.
    ``rate_limit`` is ``(qps, burst)``; None serves without limit. ``clock`` (seconds,
    monotonic) drives the rate limit.
    """

    def __init__(
        self,
        socket_path: str | Path,
        source: PodResourcesSource,
        *,
        get_mode: str = GET_SERVED,
        rate_limit: tuple[float, int] | None = None,
        clock: Callable[[], float] = time.monotonic,
        thread_pool: futures.ThreadPoolExecutor | None = None,
        max_workers: int = 2,
    ) -> None:
        if get_mode not in GET_MODES:
            raise ValueError(f"get_mode must be one of {', '.join(GET_MODES)}, not {get_mode!r}")
        self.socket_path = Path(socket_path)
        if len(str(self.socket_path).encode()) > MAX_SOCKET_PATH_BYTES:
            raise PodResourcesServerError(
                f"unix socket path {self.socket_path} is longer than "
                f"{MAX_SOCKET_PATH_BYTES} bytes; choose a shorter state directory"
            )
        self._source = source
        self._get_mode = get_mode
        self._rate_limit = rate_limit
        self._clock = clock
        self._shared_pool = thread_pool
        self._max_workers = max_workers
        self._server: grpc.Server | None = None
        self._own_pool: futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    @property
    def serving(self) -> bool:
        return self._server is not None

    def start(self) -> None:
        """Listen on the socket (replacing a stale socket file) and serve."""
        with self._lock:
            if self._server is not None:
                raise PodResourcesServerError(f"already serving on {self.socket_path}")
            self.socket_path.parent.mkdir(parents=True, exist_ok=True)
            self._remove_stale_socket()
            limiter = None
            if self._rate_limit is not None:
                qps, burst = self._rate_limit
                limiter = TokenBucket(qps, burst, clock=self._clock)
            pool = self._shared_pool
            if pool is None:
                pool = self._own_pool = futures.ThreadPoolExecutor(
                    max_workers=self._max_workers, thread_name_prefix="podresources"
                )
            server = grpc.server(pool)
            api_pb2_grpc.add_PodResourcesListerServicer_to_server(
                _Servicer(self._source, self._get_mode, limiter), server
            )
            try:
                bound = server.add_insecure_port(f"unix://{self.socket_path}")
            except RuntimeError as exc:
                raise PodResourcesServerError(
                    f"cannot listen on {self.socket_path}: {exc}"
                ) from exc
            if not bound:
                raise PodResourcesServerError(f"cannot listen on {self.socket_path}")
            server.start()
            self._server = server

    def stop(self, grace: float | None = 1.0) -> None:
        """Stop serving (in-flight calls get ``grace`` seconds) and remove the socket."""
        with self._lock:
            server, self._server = self._server, None
            if server is not None:
                server.stop(grace).wait()
            if self._own_pool is not None:
                self._own_pool.shutdown(wait=False)
                self._own_pool = None
            self.socket_path.unlink(missing_ok=True)

    def restart(self) -> None:
        """Stop and start again: the socket file is recreated, as on a kubelet restart."""
        self.stop()
        self.start()

    def __enter__(self) -> PodResourcesServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _remove_stale_socket(self) -> None:
        try:
            mode = self.socket_path.lstat().st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(mode):
            raise PodResourcesServerError(
                f"{self.socket_path} exists and is not a socket; refusing to replace it"
            )
        self.socket_path.unlink()
