"""A TCP proxy the tests control: forward to the API server, or cut every connection and
refuse new ones ("API server unreachable"), then serve again on the same port; with
``latency_s`` set, every chunk the client sends waits that long before it goes on (a
slow API server: each request, TLS handshake flight included, answered that much later)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class TcpProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        #: delay of every client -> server chunk (read at each chunk: settable any time)
        self.latency_s = 0.0
        #: client -> server chunks being delayed right now, and the most there ever were at
        #: once (how many requests a client had in flight together)
        self.delayed = 0
        self.most_delayed = 0

    def start(self) -> TcpProxy:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                downstream, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                downstream.close()
                continue
            with self._lock:
                self._conns += [downstream, upstream]
            for a, b, slow in ((downstream, upstream, True), (upstream, downstream, False)):
                threading.Thread(target=self._pump, args=(a, b, slow), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, slow: bool) -> None:
        try:
            while data := src.recv(65536):
                if slow and self.latency_s:
                    with self._lock:
                        self.delayed += 1
                        self.most_delayed = max(self.most_delayed, self.delayed)
                    try:
                        time.sleep(self.latency_s)
                    finally:
                        with self._lock:
                            self.delayed -= 1
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Close the listener and every open connection: connections are refused."""
        if self._listener is not None:
            # shutdown first: a close() alone leaves a blocked accept() listening
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def restore(self) -> None:
        self.start()

    def stop(self) -> None:
        self.cut()
