"""A fake device plugin server (API v1beta1) on a real unix socket. The only fakenrt module
that imports the generated device plugin code.

It serves one resource of a node profile (:mod:`fakenrt.deviceplugin.inventory`):

* ``GetDevicePluginOptions``: ``GetPreferredAllocation`` available, no ``PreStartContainer``;
* ``ListAndWatch``: the device list with every device's NUMA node and health, sent again
  whenever :meth:`FakeDevicePlugin.set_health` changes it;
* ``GetPreferredAllocation``: deterministic (:func:`~.inventory.preferred_allocation`);
* ``Allocate``: known, healthy ids only (else INVALID_ARGUMENT, and the kubelet fails the
  pod's admission); the answer names the ids in an environment variable;
* ``PreStartContainer``: nothing to do.

:meth:`FakeDevicePlugin.start` serves ``<dir>/<endpoint>`` and registers with the kubelet's
``<dir>/kubelet.sock`` (``Registration.Register``, version ``v1beta1``). Like real device
plugins it watches ``kubelet.sock``: when the kubelet restarts (a new socket file) it
serves its socket again if the kubelet removed it, and registers again.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Sequence
from concurrent import futures
from dataclasses import replace
from pathlib import Path

import grpc

from fakenrt.deviceplugin.inventory import PluginDevice, preferred_allocation
from protos.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc

API_VERSION = "v1beta1"
KUBELET_SOCKET = "kubelet.sock"
DEFAULT_DIR = Path("/var/lib/kubelet/device-plugins")
#: sun_path holds 108 bytes including the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107


class DevicePluginError(RuntimeError):
    """The plugin cannot start or register (bad path, no kubelet, registration refused)."""


def endpoint_name(resource: str) -> str:
    """The socket file name for a resource: ``fakenrt-nvidia.com_gpu.sock``."""
    return "fakenrt-" + re.sub(r"[^A-Za-z0-9._-]", "_", resource) + ".sock"


def env_name(resource: str) -> str:
    """The environment variable naming a container's devices of ``resource``."""
    return "FAKENRT_DEVICES_" + re.sub(r"[^A-Za-z0-9]", "_", resource).upper()


def _device_message(device: PluginDevice) -> api_pb2.Device:
    if device.numa is None:
        return api_pb2.Device(ID=device.id, health=device.health)
    topology = api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=device.numa)])
    return api_pb2.Device(ID=device.id, health=device.health, topology=topology)


class _Servicer(api_pb2_grpc.DevicePluginServicer):
    def __init__(self, plugin: FakeDevicePlugin) -> None:
        self._plugin = plugin

    def GetDevicePluginOptions(
        self, request: api_pb2.Empty, context: grpc.ServicerContext
    ) -> api_pb2.DevicePluginOptions:
        return api_pb2.DevicePluginOptions(
            pre_start_required=False, get_preferred_allocation_available=True
        )

    def ListAndWatch(
        self, request: api_pb2.Empty, context: grpc.ServicerContext
    ) -> Iterator[api_pb2.ListAndWatchResponse]:
        seen = -1
        while context.is_active():
            generation, devices = self._plugin.wait_for_change(seen, timeout=0.5)
            if generation is None:
                return  # the plugin stops
            if generation == seen:
                continue
            seen = generation
            yield api_pb2.ListAndWatchResponse(devices=[_device_message(d) for d in devices])

    def GetPreferredAllocation(
        self, request: api_pb2.PreferredAllocationRequest, context: grpc.ServicerContext
    ) -> api_pb2.PreferredAllocationResponse:
        devices = self._plugin.devices()
        return api_pb2.PreferredAllocationResponse(
            container_responses=[
                api_pb2.ContainerPreferredAllocationResponse(
                    deviceIDs=preferred_allocation(
                        devices,
                        available=r.available_deviceIDs,
                        must_include=r.must_include_deviceIDs,
                        size=r.allocation_size,
                    )
                )
                for r in request.container_requests
            ]
        )

    def Allocate(
        self, request: api_pb2.AllocateRequest, context: grpc.ServicerContext
    ) -> api_pb2.AllocateResponse:
        healthy = {d.id for d in self._plugin.devices() if d.healthy}
        responses = []
        for container in request.container_requests:
            bad = [i for i in container.devices_ids if i not in healthy]
            if bad:
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"{self._plugin.resource}: unknown or unhealthy devices: {', '.join(bad)}",
                )
            ids = ",".join(container.devices_ids)
            responses.append(
                api_pb2.ContainerAllocateResponse(envs={env_name(self._plugin.resource): ids})
            )
        return api_pb2.AllocateResponse(container_responses=responses)

    def PreStartContainer(
        self, request: api_pb2.PreStartContainerRequest, context: grpc.ServicerContext
    ) -> api_pb2.PreStartContainerResponse:
        return api_pb2.PreStartContainerResponse()


class FakeDevicePlugin:
    """One resource's fake device plugin. ``start`` serves and registers; ``stop`` stops
    serving and removes the socket."""

    def __init__(
        self,
        resource: str,
        devices: Sequence[PluginDevice],
        *,
        plugin_dir: Path = DEFAULT_DIR,
        endpoint: str | None = None,
        watch_interval: float = 1.0,
        register_timeout: float = 10.0,
    ) -> None:
        self.resource = resource
        self.plugin_dir = Path(plugin_dir)
        self.endpoint = endpoint or endpoint_name(resource)
        self.socket_path = self.plugin_dir / self.endpoint
        self.kubelet_socket = self.plugin_dir / KUBELET_SOCKET
        if not self.plugin_dir.is_absolute():
            raise DevicePluginError(f"{self.plugin_dir}: the plugin directory must be absolute")
        if len(os.fsencode(self.socket_path)) > MAX_SOCKET_PATH_BYTES:
            raise DevicePluginError(
                f"socket path {self.socket_path} is longer than {MAX_SOCKET_PATH_BYTES} bytes"
            )
        self._devices = tuple(devices)
        self._generation = 0
        self._stopped = False
        self._cond = threading.Condition()
        self._server: grpc.Server | None = None
        self._watcher: threading.Thread | None = None
        self._watch_interval = watch_interval
        self._register_timeout = register_timeout
        #: How many times the plugin registered with a kubelet.
        self.registrations = 0

    # -- device list ----------------------------------------------------------------------
    def devices(self) -> tuple[PluginDevice, ...]:
        with self._cond:
            return self._devices

    def set_health(self, device_id: str, *, healthy: bool) -> None:
        """Mark a device healthy or unhealthy; ListAndWatch streams send the new list."""
        with self._cond:
            if device_id not in {d.id for d in self._devices}:
                raise KeyError(f"{self.resource}: no device {device_id!r}")
            self._devices = tuple(
                replace(d, healthy=healthy) if d.id == device_id else d for d in self._devices
            )
            self._generation += 1
            self._cond.notify_all()

    def wait_for_change(
        self, seen: int, *, timeout: float
    ) -> tuple[int | None, tuple[PluginDevice, ...]]:
        """The current (generation, devices) once the generation differs from ``seen``
        or ``timeout`` passed; generation None once the plugin stops."""
        with self._cond:
            self._cond.wait_for(lambda: self._stopped or self._generation != seen, timeout)
            if self._stopped:
                return None, self._devices
            return self._generation, self._devices

    # -- lifecycle ------------------------------------------------------------------------
    def _serve(self) -> None:
        # A previous server goes first: its shutdown may remove the socket file at this
        # path, which must not be the new one.
        if self._server is not None:
            self._server.stop(grace=None).wait(timeout=5)
            self._server = None
        if self.socket_path.exists() or self.socket_path.is_symlink():
            self.socket_path.unlink()
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        api_pb2_grpc.add_DevicePluginServicer_to_server(_Servicer(self), server)
        try:
            server.add_insecure_port(f"unix://{self.socket_path}")
        except RuntimeError as exc:
            raise DevicePluginError(f"cannot serve on {self.socket_path}: {exc}") from exc
        server.start()
        self._server = server

    def register(self) -> None:
        """``Registration.Register`` with the kubelet; raises DevicePluginError."""
        request = api_pb2.RegisterRequest(
            version=API_VERSION,
            endpoint=self.endpoint,
            resource_name=self.resource,
            options=api_pb2.DevicePluginOptions(get_preferred_allocation_available=True),
        )
        try:
            with grpc.insecure_channel(f"unix://{self.kubelet_socket}") as channel:
                api_pb2_grpc.RegistrationStub(channel).Register(
                    request, timeout=self._register_timeout, wait_for_ready=True
                )
        except grpc.RpcError as exc:
            raise DevicePluginError(
                f"{self.resource}: registration with {self.kubelet_socket} failed: "
                f"{exc.code().name}: {exc.details()}"
            ) from exc
        self.registrations += 1

    def _kubelet_identity(self) -> tuple[int, int, int] | None:
        try:
            st = self.kubelet_socket.stat()
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_ctime_ns, st.st_mtime_ns

    def start(self) -> None:
        """Serve, register, and watch for kubelet restarts. Raises DevicePluginError."""
        if not self.plugin_dir.is_dir():  # the kubelet's to create, never made here
            raise DevicePluginError(
                f"{self.plugin_dir}: not a directory (the kubelet creates its device-plugins "
                "directory)"
            )
        self._serve()
        try:
            self.register()
        except DevicePluginError:
            self.stop()
            raise
        self._watcher = threading.Thread(
            target=self._watch, name=f"watch-{self.endpoint}", daemon=True
        )
        self._watcher.start()

    def _watch(self) -> None:
        known = self._kubelet_identity()
        while True:
            with self._cond:
                if self._cond.wait_for(lambda: self._stopped, self._watch_interval):
                    return
            current = self._kubelet_identity()
            if current is None or current == known:
                continue
            known = current
            try:
                if not self.socket_path.exists():
                    self._serve()
                self.register()
            except DevicePluginError:
                known = None  # try again at the next tick

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join(timeout=5)
        if self._server is not None:
            self._server.stop(grace=None).wait(timeout=5)
            self._server = None
        if self.socket_path.exists():
            self.socket_path.unlink()
