"""A small HTTP/1.1 server for a few GET endpoints (metrics and probes), standard library
``socket`` and ``threading`` only.

``http.server`` would do, but its import (``http.client`` and the ``email`` package for
header parsing, ``html``, ``mimetypes``...) costs about 13 ms of CPU at every start of a
daemon that runs on every node, and its ``serve_forever`` wakes twice a second to poll
for shutdown. What this one does:

* the listening socket is handed in (bound and listening already); one thread accepts,
  blocked in ``accept`` (no wake-ups while idle), and one daemon thread serves each
  connection, at most ``max_connections`` at once (more are closed at once);
* requests are ``GET`` or ``HEAD`` of a path in ``routes`` (the query string is
  ignored); anything else gets 404, 405 or 400; a request line or header block over
  8 KiB gets 431/400 and the connection is closed;
* keep-alive as HTTP/1.1 has it (Prometheus keeps its scrape connection open), closed on
  ``Connection: close``, after every HTTP/1.0 request, and after ``idle_timeout_s`` without a
  request; request bodies are not expected and a request announcing one is refused;
* ``stop()`` ends the accept loop at once (the listening socket is shut down) and
  closes the open connections.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Mapping

#: (status, body, content type) of one endpoint.
Answer = tuple[int, bytes, str]
Route = Callable[[], Answer]

MAX_HEAD = 8 * 1024
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class _BadRequest(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def _read_head(reader: Callable[[int], bytes]) -> list[bytes]:
    """The request line and header lines (without CRLF) of the next request; [] at a
    clean end of the connection."""
    lines: list[bytes] = []
    total = 0
    while True:
        line = reader(MAX_HEAD + 1)
        if not line:
            if lines:
                raise _BadRequest(400, "the connection ended inside a request head")
            return []
        total += len(line)
        if total > MAX_HEAD:
            raise _BadRequest(431, "request head larger than 8 KiB")
        line = line.rstrip(b"\r\n")
        if not line:
            if not lines:
                continue  # stray CRLF between requests (RFC 9112 2.2): skipped
            return lines
        lines.append(line)


def parse_head(lines: list[bytes]) -> tuple[str, str, str, dict[str, str]]:
    """(method, path without query, version, lower-cased headers) of a request head.
    Raises ``_BadRequest``. Pure."""
    parts = lines[0].split()
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise _BadRequest(400, "malformed request line")
    headers: dict[str, str] = {}
    for raw in lines[1:]:
        name, sep, value = raw.partition(b":")
        if not sep or not name or name != name.strip():
            raise _BadRequest(400, "malformed header line")
        headers[name.lower().decode("latin-1")] = value.strip().decode("latin-1")
    target = parts[1].decode("latin-1")
    return parts[0].decode("latin-1"), target.split("?", 1)[0], parts[2].decode(), headers


def _response(status: int, body: bytes, content_type: str, *, close: bool, head: bool) -> bytes:
    lines = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
    ]
    if status == 405:
        lines.append("Allow: GET, HEAD")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (b"" if head else body)


class HttpServer:
    """Serves ``routes`` (path -> answer) on an already listening socket."""

    def __init__(
        self,
        sock: socket.socket,
        routes: Mapping[str, Route],
        *,
        max_connections: int = 16,
        idle_timeout_s: float = 60.0,
    ) -> None:
        self._sock = sock
        self._routes = dict(routes)
        self._slots = threading.BoundedSemaphore(max_connections)
        self._idle_timeout_s = idle_timeout_s
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._accept_loop, name="http", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        with self._lock:
            self._stopped = True
            conns = list(self._open)
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept (Linux)
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._sock.close()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def _accept_loop(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                if self._stopped:
                    return
                continue  # e.g. ECONNABORTED: the client gave up before accept
            if self._stopped:
                conn.close()
                return
            if not self._slots.acquire(blocking=False):
                conn.close()  # too many open connections: refuse this one
                continue
            with self._lock:
                self._open.add(conn)
            threading.Thread(
                target=self._serve, args=(conn,), name="http-conn", daemon=True
            ).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(self._idle_timeout_s)
            with conn.makefile("rb") as rfile:
                while self._one(conn, rfile.readline):
                    pass
        except OSError:
            pass  # the peer went away, or the idle timeout: nothing to answer
        finally:
            with self._lock:
                self._open.discard(conn)
            conn.close()
            self._slots.release()

    def _one(self, conn: socket.socket, readline: Callable[[int], bytes]) -> bool:
        """Serve one request; False when the connection is to be closed."""
        try:
            lines = _read_head(readline)
            if not lines:
                return False
            method, path, version, headers = parse_head(lines)
        except _BadRequest as exc:
            answer = _response(
                exc.status, f"{exc}\n".encode(), "text/plain", close=True, head=False
            )
            conn.sendall(answer)
            return False
        close = version == "HTTP/1.0" or "close" in headers.get("connection", "").lower()
        if headers.get("content-length", "0") != "0" or "transfer-encoding" in headers:
            status, body, ctype = 400, b"request bodies are not accepted\n", "text/plain"
            close = True
        elif method not in ("GET", "HEAD"):
            status, body, ctype = 405, b"only GET and HEAD\n", "text/plain"
        elif (route := self._routes.get(path)) is None:
            status, body, ctype = 404, b"not found\n", "text/plain"
        else:
            try:
                status, body, ctype = route()
            except Exception:  # an endpoint's bug: answer 500, keep serving
                status, body, ctype = 500, b"internal error\n", "text/plain"
        conn.sendall(_response(status, body, ctype, close=close, head=method == "HEAD"))
        return not close
