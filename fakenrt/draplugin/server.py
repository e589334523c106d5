"""A fake DRA kubelet plugin on real unix sockets: the DRA kubelet plugin API v1, the DRA
device health API v1alpha1 and the plugin registration API v1, for one driver of a
profile node. The only fakenrt module that imports the generated DRA, DRA health and
registration code.

As a driver built on ``k8s.io/dynamic-resource-allocation/kubeletplugin`` does:

* ``Registration`` on ``<registry-dir>/<driver>-reg.sock`` (the kubelet's plugin watcher
  finds it there): ``GetInfo`` answers type ``DRAPlugin``, the driver name, the endpoint
  ``<plugins-dir>/<driver>/dra.sock`` and the service ``v1.DRAPlugin``;
  ``NotifyRegistrationStatus`` records the kubelet's verdict.
* ``DRAPlugin`` on the endpoint: ``NodePrepareResources`` reads each claim from the API
  server (its uid must match the request's, as the helper checks) and prepares the
  devices of its allocation that belong to this driver with
  :func:`fakenrt.dra.driver.prepare_claim` - the simulator's rule, so a real kubelet and
  the simulator list the same devices and CDI ids; a device that is not the driver's on
  this node fails that claim. ``NodeUnprepareResources`` has nothing to undo.
* ``DRAResourceHealth`` on the same endpoint: ``NodeWatchResources`` streams every
  device of the driver as healthy, again every ``health_interval_s`` (the kubelet takes
  a device's health as unknown after ``health_check_timeout_seconds`` without an update:
  three intervals), until the kubelet or the plugin ends the stream. Without it the
  kubelet v1.36 (ResourceHealthStatus, on by default) logs an error every 5 s
  (``pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go``, ``manager.go``
  ``HandleWatchResourcesStream``); with it the pod status shows each prepared device's
  health (``allocatedResourcesStatus``).

Reading claims is injected (``read_claim``), so tests can run the plugin without an API
server; the command (``fakenrt dra-plugin``) reads them with the project's Kubernetes
client.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path

import grpc

from fakenrt.dra.claims import ResourceClaim
from fakenrt.dra.driver import PrepareError, prepare_claim
from fakenrt.profiles.model import DraDriver
from protos.dra.v1 import api_pb2 as dra_pb2
from protos.dra.v1 import api_pb2_grpc as dra_grpc
from protos.drahealth.v1alpha1 import api_pb2 as health_pb2
from protos.drahealth.v1alpha1 import api_pb2_grpc as health_grpc
from protos.pluginregistration.v1 import api_pb2 as reg_pb2
from protos.pluginregistration.v1 import api_pb2_grpc as reg_grpc

#: ``k8s.io/kubelet/pkg/apis/pluginregistration/v1``: the plugin type of DRA drivers.
DRA_PLUGIN_TYPE = "DRAPlugin"
#: ``k8s.io/kubelet/pkg/apis/dra/v1``: the gRPC service the kubelet v1.36 picks.
DRA_SERVICE = "v1.DRAPlugin"
DEFAULT_PLUGINS_DIR = Path("/var/lib/kubelet/plugins")
DEFAULT_REGISTRY_DIR = Path("/var/lib/kubelet/plugins_registry")
#: How often the health stream repeats the devices' health (the kubelet's own default
#: timeout is 30 s; the plugin announces three intervals).
DEFAULT_HEALTH_INTERVAL_S = 10.0
#: sun_path holds 108 bytes including the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107

ClaimReader = Callable[[str, str], ResourceClaim]


class DraPluginError(RuntimeError):
    """The plugin cannot serve (bad path, address in use)."""


class ClaimReadError(Exception):
    """A claim could not be read; the message says why (the call fails)."""


def endpoint_path(plugins_dir: Path, driver: str) -> Path:
    return plugins_dir / driver / "dra.sock"


def registration_path(registry_dir: Path, driver: str) -> Path:
    return registry_dir / f"{driver}-reg.sock"


class _DraServicer(dra_grpc.DRAPluginServicer):
    def __init__(self, plugin: FakeDraPlugin) -> None:
        self._plugin = plugin

    def NodePrepareResources(
        self, request: dra_pb2.NodePrepareResourcesRequest, context: grpc.ServicerContext
    ) -> dra_pb2.NodePrepareResourcesResponse:
        plugin = self._plugin
        claims: list[tuple[str, ResourceClaim]] = []
        for wanted in request.claims:
            try:
                claim = plugin.read_claim(wanted.namespace, wanted.name)
            except ClaimReadError as exc:
                context.abort(grpc.StatusCode.UNKNOWN, f"get resource claims: {exc}")
            if claim.uid != wanted.uid:
                context.abort(
                    grpc.StatusCode.UNKNOWN,
                    f"get resource claims: claim {wanted.namespace}/{wanted.name}: UID "
                    f"mismatch: expected {wanted.uid}, got {claim.uid}",
                )
            claims.append((wanted.uid, claim))
        response = dra_pb2.NodePrepareResourcesResponse()
        for uid, claim in claims:
            entry = response.claims[uid]
            try:
                devices = prepare_claim(plugin.driver, plugin.node, claim)
            except PrepareError as exc:
                entry.error = str(exc)
                continue
            for device in devices:
                entry.devices.append(
                    dra_pb2.Device(
                        request_names=list(device.request_names),
                        pool_name=device.pool,
                        device_name=device.device,
                        cdi_device_ids=list(device.cdi_ids),
                        share_id=device.share_id,
                    )
                )
            plugin.prepared.add(uid)
        return response

    def NodeUnprepareResources(
        self, request: dra_pb2.NodeUnprepareResourcesRequest, context: grpc.ServicerContext
    ) -> dra_pb2.NodeUnprepareResourcesResponse:
        response = dra_pb2.NodeUnprepareResourcesResponse()
        for claim in request.claims:
            response.claims[claim.uid].CopyFrom(dra_pb2.NodeUnprepareResourceResponse())
            self._plugin.prepared.discard(claim.uid)
        return response


class _HealthServicer(health_grpc.DRAResourceHealthServicer):
    def __init__(self, plugin: FakeDraPlugin) -> None:
        self._plugin = plugin

    def _health(self) -> health_pb2.NodeWatchResourcesResponse:
        plugin = self._plugin
        now = int(time.time())
        timeout = max(1, round(3 * plugin.health_interval_s))
        return health_pb2.NodeWatchResourcesResponse(
            devices=[
                health_pb2.DeviceHealth(
                    device=health_pb2.DeviceIdentifier(
                        pool_name=plugin.driver.pool, device_name=device.name
                    ),
                    health=health_pb2.HEALTHY,
                    last_updated_time=now,
                    health_check_timeout_seconds=timeout,
                )
                for device in plugin.driver.devices
            ]
        )

    def NodeWatchResources(
        self, request: health_pb2.NodeWatchResourcesRequest, context: grpc.ServicerContext
    ) -> Iterator[health_pb2.NodeWatchResourcesResponse]:
        plugin = self._plugin
        while context.is_active() and not plugin.stopping.is_set():
            yield self._health()
            plugin.stopping.wait(plugin.health_interval_s)


class _RegistrationServicer(reg_grpc.RegistrationServicer):
    def __init__(self, plugin: FakeDraPlugin) -> None:
        self._plugin = plugin

    def GetInfo(
        self, request: reg_pb2.InfoRequest, context: grpc.ServicerContext
    ) -> reg_pb2.PluginInfo:
        return reg_pb2.PluginInfo(
            type=DRA_PLUGIN_TYPE,
            name=self._plugin.driver.name,
            endpoint=str(self._plugin.endpoint),
            supported_versions=[DRA_SERVICE],
        )

    def NotifyRegistrationStatus(
        self, request: reg_pb2.RegistrationStatus, context: grpc.ServicerContext
    ) -> reg_pb2.RegistrationStatusResponse:
        self._plugin.notified(request.plugin_registered, request.error)
        return reg_pb2.RegistrationStatusResponse()


class FakeDraPlugin:
    """One DRA driver's kubelet plugin on ``node``. ``start`` serves both sockets;
    ``stop`` stops and removes them."""

    def __init__(
        self,
        driver: DraDriver,
        *,
        node: str,
        read_claim: ClaimReader,
        plugins_dir: Path = DEFAULT_PLUGINS_DIR,
        registry_dir: Path = DEFAULT_REGISTRY_DIR,
        health_interval_s: float = DEFAULT_HEALTH_INTERVAL_S,
    ) -> None:
        self.driver = driver
        self.health_interval_s = health_interval_s
        #: set by ``stop``: ends the health streams
        self.stopping = threading.Event()
        self.node = node
        self.read_claim = read_claim
        self.endpoint = endpoint_path(Path(plugins_dir), driver.name)
        self.registration = registration_path(Path(registry_dir), driver.name)
        for socket in (self.endpoint, self.registration):
            if len(os.fsencode(socket)) > MAX_SOCKET_PATH_BYTES:
                raise DraPluginError(
                    f"socket path {socket} is longer than {MAX_SOCKET_PATH_BYTES} bytes"
                )
        #: Uids of the claims prepared and not unprepared since.
        self.prepared: set[str] = set()
        self._registered = threading.Event()
        self.registration_error: str | None = None
        self._servers: list[grpc.Server] = []

    def notified(self, registered: bool, error: str) -> None:
        self.registration_error = None if registered else error
        if registered:
            self._registered.set()

    def wait_registered(self, timeout: float) -> bool:
        """Whether the kubelet reported a successful registration within ``timeout``."""
        return self._registered.wait(timeout)

    def _serve(self, socket: Path, add: Callable[[grpc.Server], None]) -> grpc.Server:
        socket.parent.mkdir(parents=True, exist_ok=True)
        if socket.exists() or socket.is_symlink():
            socket.unlink()
        # a health stream holds a worker for as long as it is open
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        add(server)
        try:
            server.add_insecure_port(f"unix://{socket}")
        except RuntimeError as exc:
            raise DraPluginError(f"cannot serve on {socket}: {exc}") from exc
        server.start()
        return server

    def _add_endpoint_services(self, server: grpc.Server) -> None:
        dra_grpc.add_DRAPluginServicer_to_server(_DraServicer(self), server)
        health_grpc.add_DRAResourceHealthServicer_to_server(_HealthServicer(self), server)

    def start(self) -> None:
        """Serve DRAPlugin first, then the registration socket the kubelet watches for
        (so the endpoint answers once the kubelet finds the plugin)."""
        self._servers.append(
            self._serve(
                self.endpoint,
                self._add_endpoint_services,
            )
        )
        self._servers.append(
            self._serve(
                self.registration,
                lambda s: reg_grpc.add_RegistrationServicer_to_server(
                    _RegistrationServicer(self), s
                ),
            )
        )

    def stop(self) -> None:
        self.stopping.set()
        # the registration socket first: the kubelet then deregisters the plugin
        for server in reversed(self._servers):
            server.stop(grace=None).wait(timeout=5)
        self._servers.clear()
        for socket in (self.registration, self.endpoint):
            socket.unlink(missing_ok=True)
