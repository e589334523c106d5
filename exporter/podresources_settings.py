"""How the exporter reaches the kubelet's podresources API, known without importing gRPC:
the socket's default path, the call deadline, the receive limit, the channel's arguments,
and the settings gRPC's core reads from the environment once, when ``grpc`` is imported.

The exporter makes one small call a second (``List``). With grpcio's defaults each call
cost about 2 ms of CPU, more than half of it in grpc's own threads rather than in the
call (docs/exporter.md, Resources). Two settings grpc documents take most of that away:

* ``GRPC_EXPERIMENTS`` without ``event_engine_client`` and
  ``event_engine_for_all_other_endpoints``: the channel's socket is then read and
  written by the calling thread, polling it while it waits for the answer (the completion
  queue's pollset), instead of by the EventEngine's thread pool. Each of the pool's
  workers that ran a piece of a call (a read, a write, a timer) then checks for more work
  on a backoff of 15 ms growing 1.3x per check (grpc's
  ``src/core/lib/event_engine/thread_pool/work_stealing_thread_pool.cc``): at one call a
  second that was ~30 wake-ups and ~0.7 ms of CPU a second on this project's 2-CPU
  machine, and grpc sizes the pool by the node's CPUs (4 to 16 threads). The pool stays
  (timers, the lifeguard), nearly idle. ``tests/exporter/test_podresources_settings.py`` fails
  when a grpcio release no longer knows these experiments or ignores them.
* ``grpc.http2.bdp_probe`` off (:data:`CHANNEL_OPTIONS`): bandwidth-delay probing sizes
  the flow-control window for bulk transfers over long links; on a unix socket to the
  kubelet it only added a ping, its acknowledgement and a timer to every call.

:func:`configure_grpc_core` sets the environment; it must run before ``grpc`` is first
imported (the console script's first step, ``exporter.cli.main``): gRPC reads it once.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from pathlib import Path

DEFAULT_SOCKET = Path("/var/lib/kubelet/pod-resources/kubelet.sock")
DEFAULT_TIMEOUT_S = 10.0
#: The largest answer accepted (gRPC's default, 4 MiB, is a few hundred pods; the
#: kubelet's own clients allow 16 MiB).
MAX_RECEIVE_BYTES = 16 * 1024 * 1024
#: The experiments turned off (a ``GRPC_EXPERIMENTS`` value: ``-name`` disables one).
GRPC_EXPERIMENTS = "-event_engine_client,-event_engine_for_all_other_endpoints"
#: Channel arguments every podresources channel gets (with the receive limit).
CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (("grpc.http2.bdp_probe", 0),)


class GrpcAlreadyImported(RuntimeError):
    """gRPC was imported before its environment was set: the settings would not apply."""


def configure_grpc_core(environ: MutableMapping[str, str] | None = None) -> None:
    """Set ``GRPC_EXPERIMENTS`` in the environment gRPC's core will read, unless it is set
    already (an operator's own value wins, in the DaemonSet or the shell). Raises
    :class:`GrpcAlreadyImported` when ``grpc`` is imported already in this process."""
    if "grpc" in sys.modules:
        raise GrpcAlreadyImported(
            "grpc is imported already: GRPC_EXPERIMENTS must be set before its import"
        )
    target = os.environ if environ is None else environ
    target.setdefault("GRPC_EXPERIMENTS", GRPC_EXPERIMENTS)
