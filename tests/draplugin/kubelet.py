"""The kubelet's side of DRA plugin registration, for tests: a plugin watcher that finds
``*-reg.sock`` sockets in a registry directory, calls ``GetInfo``, validates the answer as
the kubelet's DRA plugin manager does (type ``DRAPlugin``, a supported service it speaks:
``v1.DRAPlugin``) and reports with ``NotifyRegistrationStatus`` - then calls the plugin's
endpoint as the kubelet's DRA manager does (prepare, unprepare, the health stream). All
over real unix sockets."""

from __future__ import annotations

import threading
from pathlib import Path

import grpc

from protos.dra.v1 import api_pb2 as dra_pb2
from protos.dra.v1 import api_pb2_grpc as dra_grpc
from protos.drahealth.v1alpha1 import api_pb2 as health_pb2
from protos.drahealth.v1alpha1 import api_pb2_grpc as health_grpc
from protos.pluginregistration.v1 import api_pb2 as reg_pb2
from protos.pluginregistration.v1 import api_pb2_grpc as reg_grpc

SERVICES = ("v1.DRAPlugin", "v1beta1.DRAPlugin")  # what kubelet v1.36 speaks, newest first


class FakePluginWatcher:
    """Registers every DRA plugin that appears in ``registry``; ``plugins`` maps a driver
    name to its endpoint."""

    def __init__(
        self, registry: Path, *, interval: float = 0.05, services: tuple[str, ...] = SERVICES
    ) -> None:
        self.registry = registry
        self.services = services
        self.plugins: dict[str, str] = {}
        self.infos: list[reg_pb2.PluginInfo] = []
        self._seen: set[str] = set()
        self._stop = threading.Event()
        self._interval = interval
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            for socket in (
                sorted(self.registry.glob("*-reg.sock")) if self.registry.exists() else ()
            ):
                if str(socket) in self._seen:
                    continue
                self._seen.add(str(socket))
                self._register(socket)

    def _register(self, socket: Path) -> None:
        with grpc.insecure_channel(f"unix://{socket}") as channel:
            stub = reg_grpc.RegistrationStub(channel)
            info = stub.GetInfo(reg_pb2.InfoRequest(), timeout=5)
            self.infos.append(info)
            ok = info.type == "DRAPlugin" and any(
                v in self.services for v in info.supported_versions
            )
            error = "" if ok else f"none of {list(info.supported_versions)} is supported"
            if ok:
                self.plugins[info.name] = info.endpoint
            stub.NotifyRegistrationStatus(
                reg_pb2.RegistrationStatus(plugin_registered=ok, error=error), timeout=5
            )

    def prepare(
        self, driver: str, *claims: tuple[str, str, str]
    ) -> dra_pb2.NodePrepareResourcesResponse:
        """NodePrepareResources for (namespace, uid, name) claims."""
        with grpc.insecure_channel(f"unix://{self.plugins[driver]}") as channel:
            return dra_grpc.DRAPluginStub(channel).NodePrepareResources(
                dra_pb2.NodePrepareResourcesRequest(
                    claims=[dra_pb2.Claim(namespace=n, uid=u, name=c) for n, u, c in claims]
                ),
                timeout=5,
            )

    def unprepare(
        self, driver: str, *claims: tuple[str, str, str]
    ) -> dra_pb2.NodeUnprepareResourcesResponse:
        with grpc.insecure_channel(f"unix://{self.plugins[driver]}") as channel:
            return dra_grpc.DRAPluginStub(channel).NodeUnprepareResources(
                dra_pb2.NodeUnprepareResourcesRequest(
                    claims=[dra_pb2.Claim(namespace=n, uid=u, name=c) for n, u, c in claims]
                ),
                timeout=5,
            )

    def watch_health(
        self, driver: str, answers: int, *, timeout: float = 10
    ) -> list[health_pb2.NodeWatchResourcesResponse]:
        """The first ``answers`` of NodeWatchResources, on the endpoint's connection (as
        the kubelet's DRA plugin manager opens it); then the connection closes."""
        out: list[health_pb2.NodeWatchResourcesResponse] = []
        with grpc.insecure_channel(f"unix://{self.plugins[driver]}") as channel:
            stream = health_grpc.DRAResourceHealthStub(channel).NodeWatchResources(
                health_pb2.NodeWatchResourcesRequest(), timeout=timeout
            )
            for answer in stream:
                out.append(answer)
                if len(out) == answers:
                    break  # closing the channel cancels the stream
        return out

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
