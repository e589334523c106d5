"""The node's ResourceSlices, fed by list + watch (field selector ``spec.nodeName``): what
the exporter needs to place a DRA device (``exporter.dra_numa``).

Only slices naming this node are read: the API server filters on ``spec.nodeName`` (a
field ResourceSlices support for this purpose), and RBAC grants list/watch of slices,
nothing else of DRA. ``run()`` lists, then watches from the list's resourceVersion,
relists on 410 Gone, backs off with jitter on failures (``exporter.listwatch``) and
retries slowly when the API server does not serve ``resource.k8s.io/v1`` (a cluster
without DRA: no DRA device is ever placed, nothing else changes) or refuses the list (an
install without the DRA rule of manifests/exporter/rbac.yaml: logged once, as an error
naming the fix). Every change bumps ``generation`` and calls ``on_change``; the index
(device -> attributes) is rebuilt lazily once per generation.
At most :data:`MAX_SLICES` slices are kept: a node's drivers publish a few, so more is a
misbehaving writer, not a reason to grow without bound.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from exporter.dra_numa import DeviceKey, DeviceNuma, PciNuma, index_slices, resolve
from exporter.kubeerrors import ApiError, Forbidden, NotFound
from exporter.listwatch import Interruptible, ListWatch
from exporter.resources import ClaimDevice

log = logging.getLogger(__name__)

NOT_SERVED_RETRY_S = 60.0
MAX_SLICES = 4096


class SliceSource(Protocol):
    def list_node_slices(self, node_name: str) -> tuple[str, list[dict[str, Any]]]: ...

    def watch_node_slices(
        self,
        node_name: str,
        resource_version: str,
        *,
        on_open: Callable[[Interruptible], None] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]: ...


class SliceCache:
    def __init__(
        self,
        source: SliceSource,
        node_name: str,
        *,
        on_change: Callable[[], None] = lambda: None,
        rng: random.Random | None = None,
    ) -> None:
        self._source = source
        self.node_name = node_name
        self._on_change = on_change
        self._lock = threading.Lock()
        self._slices: dict[str, Mapping[str, Any]] = {}
        self._index: dict[DeviceKey, dict[str, Any] | None] = {}
        self._indexed = -1
        self._loop = ListWatch(
            "ResourceSlice",
            log,
            list_=lambda: source.list_node_slices(node_name),
            watch=lambda version, on_open: source.watch_node_slices(
                node_name, version, on_open=on_open
            ),
            on_list=self._listed,
            on_event=self._event,
            on_error=self._refused,
            rng=rng,
        )
        #: bumped on every change of the slices held
        self.generation = 0
        #: the API server serves resource.k8s.io/v1 (None: not asked yet)
        self.served: bool | None = None
        #: the API server refused the list (RBAC)
        self.forbidden = False
        self.synced = threading.Event()

    # -- contents -----------------------------------------------------------------------
    def _name(self, obj: Mapping[str, Any]) -> str:
        return str((obj.get("metadata") or {}).get("name") or "")

    def held(self) -> frozenset[str]:
        """The names of the slices held now."""
        with self._lock:
            return frozenset(self._slices)

    def replace(self, objects: list[dict[str, Any]]) -> None:
        kept: dict[str, Mapping[str, Any]] = {
            self._name(o): o for o in objects[:MAX_SLICES] if self._name(o)
        }
        if len(objects) > MAX_SLICES:
            log.warning(
                "too many ResourceSlices for the node; keeping the first",
                extra={"slices": len(objects), "kept": MAX_SLICES},
            )
        with self._lock:
            self._slices = kept
            self.generation += 1
        self._on_change()

    def upsert(self, obj: dict[str, Any]) -> None:
        name = self._name(obj)
        with self._lock:
            if not name or (name not in self._slices and len(self._slices) >= MAX_SLICES):
                return
            self._slices[name] = obj
            self.generation += 1
        self._on_change()

    def delete(self, obj: Mapping[str, Any]) -> None:
        with self._lock:
            if self._slices.pop(self._name(obj), None) is None:
                return
            self.generation += 1
        self._on_change()

    def _current_index(self) -> dict[DeviceKey, dict[str, Any] | None]:
        with self._lock:
            if self._indexed != self.generation:
                self._index = index_slices(self._slices.values())
                self._indexed = self.generation
            return self._index

    def locate(self, device: ClaimDevice, pci_numa: PciNuma) -> DeviceNuma:
        """The device's NUMA node and the rule that answered."""
        index = self._current_index()
        return resolve(
            device.driver, index.get((device.driver, device.pool, device.device)), pci_numa
        )

    # -- the loop -------------------------------------------------------------------
    def _listed(self, items: list[dict[str, Any]]) -> None:
        self.served = True
        self.forbidden = False
        self.replace(items)
        self.synced.set()

    def _event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind in ("ADDED", "MODIFIED"):
            self.upsert(obj)
        elif kind == "DELETED":
            self.delete(obj)

    def _refused(self, exc: ApiError) -> float | None:
        """A cluster without DRA, or an install without the DRA rule: said once, then
        asked again slowly; any other error is a failure to back off from."""
        if isinstance(exc, NotFound):
            if self.served is not False:
                log.info("resource.k8s.io/v1 is not served: no DRA device will be placed")
            self.served = False
        elif isinstance(exc, Forbidden):
            if not self.forbidden:
                log.error(
                    "may not list ResourceSlices: no DRA device will be placed until the "
                    "exporter's ClusterRole grants list/watch of resourceslices "
                    "(manifests/exporter/rbac.yaml)",
                    extra={"error": str(exc)},
                )
            self.forbidden = True
        else:
            return None
        self.synced.set()
        return NOT_SERVED_RETRY_S

    def interrupt(self) -> None:
        self._loop.interrupt()

    def run(self, stop: threading.Event) -> None:
        """List and watch until ``stop`` is set (``exporter.listwatch``)."""
        self._loop.run(stop)
