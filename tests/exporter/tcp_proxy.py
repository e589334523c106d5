"""A TCP proxy the tests control: forward to the API server, or cut every connection and
refuse new ones ("API server unreachable"), then serve again on the same port. With
``delay_s`` every byte from the client reaches the server that much later (a slow API
server: each request, and each flight of a TLS handshake, waits ``delay_s``; the
connections do not wait for each other, and the answers are not delayed)."""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time


class TcpProxy:
    def __init__(self, upstream_port: int, *, delay_s: float = 0.0) -> None:
        self.upstream_port = upstream_port
        self.delay_s = delay_s
        self.port = 0
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()

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
            to_server = self._delayed_pump if self.delay_s > 0 else self._pump
            threading.Thread(target=to_server, args=(downstream, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, downstream), daemon=True).start()

    def _delayed_pump(self, src: socket.socket, dst: socket.socket) -> None:
        """Forward ``src`` to ``dst``, each chunk ``delay_s`` after it arrived, in order."""
        chunks: queue.Queue[tuple[float, bytes]] = queue.Queue()

        def send() -> None:
            try:
                while True:
                    due, data = chunks.get()
                    time.sleep(max(0.0, due - time.monotonic()))
                    if not data:
                        break
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    with contextlib.suppress(OSError):
                        s.shutdown(socket.SHUT_RDWR)

        threading.Thread(target=send, daemon=True).start()
        try:
            while data := src.recv(65536):
                chunks.put((time.monotonic() + self.delay_s, data))
        except OSError:
            pass
        chunks.put((time.monotonic() + self.delay_s, b""))

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
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
